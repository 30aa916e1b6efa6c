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
  AvgPoolKernel(const Layer& layer, const PoolGeometry& g) : layer_(layer), g_(g) {
    // Every window inside the plane (no padding, none cut by ceil mode): one divisor, and the sums can
    // run a window tap at a time over whole output rows (vectorised), in the same row-major order.
    const PoolWindow first = pool_window(g, 0, 0);
    uniform_ = !g.adaptive && g.pad_h == 0 && g.pad_w == 0 && (g.out_h - 1) * g.stride_h + g.kernel_h <= g.h &&
               (g.out_w - 1) * g.stride_w + g.kernel_w <= g.w && first.divisor == g.kernel_h * g.kernel_w;
  }

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    require(x.rank() == 4 && x.dim(2) == g_.h && x.dim(3) == g_.w,
            "layer '" + layer_.name() + "' (" + layer_.type() + "): input " + to_string(x.shape()) +
                " does not fit the prepared plane " + std::to_string(g_.h) + "x" + std::to_string(g_.w));
    const int64_t n = x.dim(0), c = x.dim(1), h = g_.h, w = g_.w, ho = g_.out_h, wo = g_.out_w;
    out.resize({n, c, ho, wo});
    if (uniform_) {
      const float divisor = float(g_.kernel_h * g_.kernel_w);
      const int64_t sw = g_.stride_w;
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < n * c; ++p) {
        const float* in = x.data() + p * h * w;
        float* o = out.data() + p * ho * wo;
        for (int64_t oy = 0; oy < ho; ++oy) {
          float* row = o + oy * wo;
          for (int64_t ox = 0; ox < wo; ++ox) row[ox] = 0.0f;
          for (int64_t ky = 0; ky < g_.kernel_h; ++ky)
            for (int64_t kx = 0; kx < g_.kernel_w; ++kx) {
              const float* src = in + (oy * g_.stride_h + ky) * w + kx;
              for (int64_t ox = 0; ox < wo; ++ox) row[ox] += src[ox * sw];
            }
          for (int64_t ox = 0; ox < wo; ++ox) row[ox] /= divisor;
        }
      }
      return;
    }
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
  bool uniform_ = false;
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
