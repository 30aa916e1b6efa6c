// CUDA kernel of MaxPool2d. ANN view: max pooling. SNN view: the exact spiking rule of
// snn/layers/pooling.hpp, as in the CPU twin: a running sum of every input, and at each step the
// increase of the window's largest running sum (the state carries across chunks). Per step, one pass adds
// the step's input to the running sums, a second emits per output window; ties and signed zeros
// resolve as in the CPU's std::max (keep the current value unless the new one is larger).
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cuda {
namespace {

__device__ __forceinline__ float larger(float m, float v) { return m < v ? v : m; }  // std::max(m, v)

__device__ __forceinline__ float window_max(const float* plane, const PoolGeometry& g, int64_t oy, int64_t ox) {
  float m = -INFINITY;
  for_each_in_window(g, oy, ox, [&](int64_t i) { m = larger(m, plane[i]); });
  return m;
}

__global__ void maxpool_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n_out, int64_t ho,
                               int64_t wo, PoolGeometry g) {
  SNN_GRID_LOOP(k, n_out) {
    const int64_t plane = k / (ho * wo), r = k - plane * ho * wo, oy = r / wo, ox = r - oy * wo;
    out[k] = window_max(x + plane * g.h * g.w, g, oy, ox);
  }
}

__global__ void accumulate_kernel(float* __restrict__ sum, const float* __restrict__ x, int64_t n) {
  SNN_GRID_LOOP(i, n) sum[i] = sum[i] + x[i];
}

// out = (largest running sum in the window) − (that value after the previous step); remember it.
__global__ void spiking_max_kernel(const float* __restrict__ sum, float* __restrict__ prev, float* __restrict__ out,
                                   int64_t n_out, int64_t ho, int64_t wo, PoolGeometry g) {
  SNN_GRID_LOOP(k, n_out) {
    const int64_t plane = k / (ho * wo), r = k - plane * ho * wo, oy = r / wo, ox = r - oy * wo;
    const float best = window_max(sum + plane * g.h * g.w, g, oy, ox);
    out[k] = best - prev[k];
    prev[k] = best;
  }
}

struct RunningSums : KernelState {
  DeviceTensor sum;  // [batch, C, H, W]: each input summed over all steps so far
  DeviceTensor max;  // [batch, C, Ho, Wo]: the largest running sum of each window after the previous step
};

class MaxPoolKernel : public Kernel {
 public:
  MaxPoolKernel(const MaxPool2d& layer, const Shape& input)
      : where_(where(layer)), in_(input), out_(layer.output_shape({input})), g_(layer.geometry(input[1], input[2])) {}

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& x = *inputs.at(0);
    check_input(x);
    out.resize({x.dim(0), out_[0], out_[1], out_[2]});
    if (out.numel() == 0) return;
    maxpool_kernel<<<blocks_for(out.numel()), kThreads>>>(x.data(), out.data(), out.numel(), out_[1], out_[2], g_);
    check_launch("maxpool_kernel", where_);
  }

  std::unique_ptr<KernelState> make_state(int64_t batch) const override {
    auto st = std::make_unique<RunningSums>();
    st->sum.resize({batch, in_[0], in_[1], in_[2]});
    st->sum.fill_zero();
    st->max.resize({batch, out_[0], out_[1], out_[2]});
    st->max.fill_zero();
    return st;
  }

  void forward_snn(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out, KernelState* state,
                   const StepChunk& chunk) override {
    const DeviceTensor& x = *inputs.at(0);
    check_input(x);
    auto* st = static_cast<RunningSums*>(state);
    const int64_t per_in = chunk.batch * numel_of(in_), per_out = chunk.batch * numel_of(out_);
    require(st != nullptr && st->sum.numel() == per_in && x.numel() == chunk.steps * per_in,
            where_ + ": input " + to_string(x.shape()) + " does not fit the state");
    out.resize({x.dim(0), out_[0], out_[1], out_[2]});
    if (per_out == 0) return;
    const PoolGeometry& g = g_;
    for (int64_t t = 0; t < chunk.steps; ++t) {
      accumulate_kernel<<<blocks_for(per_in), kThreads>>>(st->sum.data(), x.data() + t * per_in, per_in);
      check_launch("accumulate_kernel", where_);
      spiking_max_kernel<<<blocks_for(per_out), kThreads>>>(st->sum.data(), st->max.data(), out.data() + t * per_out,
                                                            per_out, out_[1], out_[2], g);
      check_launch("spiking_max_kernel", where_);
    }
  }

 private:
  void check_input(const DeviceTensor& x) const {
    require(x.rank() == 4 && x.numel() == x.dim(0) * numel_of(in_),
            where_ + ": input " + to_string(x.shape()) + " does not fit " + to_string(in_));
  }

  std::string where_;
  Shape in_, out_;
  PoolGeometry g_;  // windows as PyTorch's, ceil_mode included; never empty, so −∞ never escapes
};

const bool registered = kernels().add("maxpool2d", [](const Layer& l, const std::vector<Shape>& in, Context&) {
  return std::make_unique<MaxPoolKernel>(static_cast<const MaxPool2d&>(l), in.at(0));
});

}  // namespace
}  // namespace snn::cuda
