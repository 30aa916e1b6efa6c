// CPU kernel of AvgPool2d and AdaptiveAvgPool2d: linear, so the same code serves both views (spikes
// average as rates do). Each output sums its window (snn/pool_window.hpp) in row-major order and divides
// by the window's divisor, as PyTorch does.
#include <cstdint>

#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cpu {
namespace {

class AvgPoolKernel : public Kernel {
 public:
  AvgPoolKernel(const Layer& layer, const PoolGeometry& g) : layer_(layer), g_(g) {}

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    require(x.rank() == 4 && x.dim(2) == g_.h && x.dim(3) == g_.w,
            "layer '" + layer_.name() + "' (" + layer_.type() + "): input " + to_string(x.shape()) +
                " does not fit the prepared plane " + std::to_string(g_.h) + "x" + std::to_string(g_.w));
    const int64_t n = x.dim(0), c = x.dim(1), h = g_.h, w = g_.w, ho = g_.out_h, wo = g_.out_w;
    out.resize({n, c, ho, wo});
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n * c; ++p) {
      const float* in = x.data() + p * h * w;
      float* o = out.data() + p * ho * wo;
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          const PoolWindow win = pool_window(g_, oy, ox);
          float acc = 0.0f;
          for_each_in_window(win, w, [&](int64_t i) { acc += in[i]; });
          o[oy * wo + ox] = acc / float(win.divisor);
        }
    }
  }

 private:
  const Layer& layer_;
  PoolGeometry g_;
};

// output_shape first: it checks the input shape, naming the layer.
const bool registered = kernels().add("avgpool2d", [](const Layer& l, const std::vector<Shape>& in) {
  l.output_shape(in);
  return std::make_unique<AvgPoolKernel>(l, static_cast<const AvgPool2d&>(l).geometry(in[0][1], in[0][2]));
});
const bool registered_adaptive = kernels().add("adaptive_avgpool2d", [](const Layer& l, const std::vector<Shape>& in) {
  l.output_shape(in);
  return std::make_unique<AvgPoolKernel>(l, static_cast<const AdaptiveAvgPool2d&>(l).geometry(in[0][1], in[0][2]));
});

}  // namespace
}  // namespace snn::cpu
