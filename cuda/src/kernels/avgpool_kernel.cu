// CUDA kernel of AvgPool2d and AdaptiveAvgPool2d: linear, so the same code serves both views. One thread
// per output element sums its window in the core's visiting order (snn/pool_window.hpp) and divides by
// the window's divisor (as PyTorch and the CPU backend): bit-identical to the CPU.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cuda {
namespace {

__global__ void avgpool_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n_out, PoolGeometry g) {
  const int64_t ho = g.out_h, wo = g.out_w;
  SNN_GRID_LOOP(k, n_out) {
    const int64_t plane = k / (ho * wo), r = k - plane * ho * wo, oy = r / wo, ox = r - oy * wo;
    const float* in = x + plane * g.h * g.w;
    const PoolWindow win = pool_window(g, oy, ox);
    float acc = 0.0f;
    for_each_in_window(win, g.w, [&](int64_t i) { acc = acc + in[i]; });
    out[k] = acc / float(win.divisor);
  }
}

class AvgPoolKernel : public Kernel {
 public:
  // `g` from the layer (regular or adaptive windows) for the prepared input shape.
  AvgPoolKernel(const Layer& layer, const Shape& input, const PoolGeometry& g)
      : where_(where(layer)), in_(input), out_(layer.output_shape({input})), g_(g) {}

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& x = *inputs.at(0);
    const int64_t per_in = numel_of(in_);
    require(x.rank() == 4 && x.numel() == x.dim(0) * per_in,
            where_ + ": input " + to_string(x.shape()) + " does not fit " + to_string(in_));
    const int64_t n = x.dim(0);
    out.resize({n, out_[0], out_[1], out_[2]});
    if (out.numel() == 0) return;
    avgpool_kernel<<<blocks_for(out.numel()), kThreads>>>(x.data(), out.data(), out.numel(), g_);
    check_launch("avgpool_kernel", where_);
  }

 private:
  std::string where_;
  Shape in_, out_;
  PoolGeometry g_;
};

// output_shape first: it checks the input shape, naming the layer.
const bool registered = kernels().add("avgpool2d", [](const Layer& l, const std::vector<Shape>& in, Context&) {
  l.output_shape(in);
  const PoolGeometry g = static_cast<const AvgPool2d&>(l).geometry(in[0][1], in[0][2]);
  return std::make_unique<AvgPoolKernel>(l, in[0], g);
});
const bool registered_adaptive =
    kernels().add("adaptive_avgpool2d", [](const Layer& l, const std::vector<Shape>& in, Context&) {
      l.output_shape(in);
      const PoolGeometry g = static_cast<const AdaptiveAvgPool2d&>(l).geometry(in[0][1], in[0][2]);
      return std::make_unique<AvgPoolKernel>(l, in[0], g);
    });

}  // namespace
}  // namespace snn::cuda
