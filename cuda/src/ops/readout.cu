// The anytime readout on the device (the CPU backend's loop, one thread per image) and the per-channel
// bias add that follows a layer's GEMM or convolution.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/ops.hpp"

namespace snn::cuda {

namespace {

__global__ void readout_kernel(const float* __restrict__ y, bool y_static, int64_t steps, int64_t B, int64_t K,
                               float* __restrict__ acc, int32_t* __restrict__ pred) {
  SNN_GRID_LOOP(b, B) {
    float* a = acc + b * K;
    for (int64_t t = 0; t < steps; ++t) {
      const float* row = y + ((y_static ? 0 : t * B) + b) * K;
      int32_t best = 0;
      for (int64_t k = 0; k < K; ++k) {
        a[k] = a[k] + row[k];
        if (a[k] > a[best]) best = int32_t(k);  // ties keep the lowest class, as on the CPU
      }
      pred[t * B + b] = best;
    }
  }
}

__global__ void channel_bias_kernel(float* __restrict__ y, const float* __restrict__ bias, int64_t n, int64_t C,
                                    int64_t inner) {
  SNN_GRID_LOOP(i, n) y[i] = y[i] + bias[(i / inner) % C];
}

}  // namespace

void readout_chunk(const float* y, bool y_static, int64_t steps, int64_t B, int64_t K, float* acc, int32_t* pred) {
  if (B == 0 || steps == 0 || K == 0) return;
  readout_kernel<<<blocks_for(B), kThreads>>>(y, y_static, steps, B, K, acc, pred);
  check_launch("readout_kernel", "cuda backend: anytime readout");
}

void add_channel_bias(float* y, const float* bias, int64_t outer, int64_t C, int64_t inner, const std::string& where) {
  const int64_t n = outer * C * inner;
  if (n == 0) return;
  channel_bias_kernel<<<blocks_for(n), kThreads>>>(y, bias, n, C, inner);
  check_launch("channel_bias_kernel", where);
}

}  // namespace snn::cuda
