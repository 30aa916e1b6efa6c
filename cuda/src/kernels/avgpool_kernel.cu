// CUDA kernel of AvgPool2d: linear, so the same code serves both views. One thread per output element
// sums its window in the core's visiting order (snn/pool_window.hpp) and divides by the window area
// (count_include_pad, as PyTorch and the CPU backend): bit-identical to the CPU.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cuda {
namespace {

__global__ void avgpool_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n_out, int64_t ho,
                               int64_t wo, PoolGeometry g) {
  const float area = float(g.kernel_h * g.kernel_w);
  SNN_GRID_LOOP(k, n_out) {
    const int64_t plane = k / (ho * wo), r = k - plane * ho * wo, oy = r / wo, ox = r - oy * wo;
    const float* in = x + plane * g.h * g.w;
    float acc = 0.0f;
    for_each_in_window(g, oy, ox, [&](int64_t i) { acc = acc + in[i]; });
    out[k] = acc / area;
  }
}

class AvgPoolKernel : public Kernel {
 public:
  AvgPoolKernel(const AvgPool2d& layer, const Shape& input)
      : layer_(layer), where_(where(layer)), in_(input), out_(layer.output_shape({input})) {}

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& x = *inputs.at(0);
    const int64_t per_in = numel_of(in_);
    require(x.rank() == 4 && x.numel() == x.dim(0) * per_in,
            where_ + ": input " + to_string(x.shape()) + " does not fit " + to_string(in_));
    const int64_t n = x.dim(0);
    out.resize({n, out_[0], out_[1], out_[2]});
    if (out.numel() == 0) return;
    avgpool_kernel<<<blocks_for(out.numel()), kThreads>>>(x.data(), out.data(), out.numel(), out_[1], out_[2],
                                                          layer_.geometry(in_[1], in_[2]));
    check_launch("avgpool_kernel", where_);
  }

 private:
  const AvgPool2d& layer_;
  std::string where_;
  Shape in_, out_;
};

const bool registered = kernels().add("avgpool2d", [](const Layer& l, const std::vector<Shape>& in, Context&) {
  return std::make_unique<AvgPoolKernel>(static_cast<const AvgPool2d&>(l), in.at(0));
});

}  // namespace
}  // namespace snn::cuda
