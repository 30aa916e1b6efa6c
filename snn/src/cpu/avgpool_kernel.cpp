// CPU kernel of AvgPool2d: linear, so the same code serves both views (spikes average as rates do).
#include <cstdint>

#include "snn/cpu/kernel.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cpu {
namespace {

class AvgPoolKernel : public Kernel {
 public:
  explicit AvgPoolKernel(const AvgPool2d& layer) : layer_(layer) {}

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const Shape os = layer_.output_shape({{c, h, w}});
    const int64_t ho = os[1], wo = os[2];
    out.resize({n, c, ho, wo});
    const PoolGeometry g = layer_.geometry(h, w);
    const float area = float(g.kernel_h * g.kernel_w);  // divide, as PyTorch does (count_include_pad)
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n * c; ++p) {
      const float* in = x.data() + p * h * w;
      float* o = out.data() + p * ho * wo;
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          float acc = 0.0f;
          for_each_in_window(g, oy, ox, [&](int64_t i) { acc += in[i]; });
          o[oy * wo + ox] = acc / area;
        }
    }
  }

 private:
  const AvgPool2d& layer_;
};

const bool registered = kernels().add("avgpool2d", [](const Layer& l, const std::vector<Shape>&) {
  return std::make_unique<AvgPoolKernel>(static_cast<const AvgPool2d&>(l));
});

}  // namespace
}  // namespace snn::cpu
