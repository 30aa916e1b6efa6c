// Input passes of the engine: preprocessing, Poisson encoding, repeating static outputs over steps.
// The arithmetic is the core's (snn/network.cpp preprocess, snn/philox.hpp), compiled without FMA
// contraction (-fmad=false), so the device input is bit-identical to the CPU's.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/ops.hpp"
#include "snn/philox.hpp"

namespace snn::cuda {

namespace {

__global__ void preprocess_kernel(const float* __restrict__ x, int64_t n, int64_t C, int64_t inner,
                                  const float* __restrict__ mean, const float* __restrict__ std,
                                  float* __restrict__ out) {
  SNN_GRID_LOOP(i, n) {
    const int64_t c = (i / inner) % C;
    out[i] = (x[i] - mean[c]) / std[c];  // divide, as PyTorch and the CPU backend do
  }
}

__global__ void poisson_kernel(const float* __restrict__ raw, int64_t n, int64_t C, int64_t inner,
                               const float* __restrict__ mean, const float* __restrict__ std, uint64_t seed, int64_t t0,
                               int64_t total, float* __restrict__ out) {
  SNN_GRID_LOOP(k, total) {
    const int64_t t = k / n, i = k - t * n, c = (i / inner) % C;
    const float m = mean ? mean[c] : 0.0f, s = std ? std[c] : 1.0f;
    out[k] = philox::poisson_pixel(seed, uint64_t(t0 + t), uint64_t(i), raw[i], m, s);
  }
}

}  // namespace

void preprocess(const float* x, int64_t n, int64_t C, int64_t inner, const float* mean, const float* std, float* out) {
  if (n == 0) return;
  preprocess_kernel<<<blocks_for(n), kThreads>>>(x, n, C, inner, mean, std, out);
  check_launch("preprocess_kernel", "cuda backend: input preprocessing");
}

void poisson_encode(const float* raw, int64_t n, int64_t C, int64_t inner, const float* mean, const float* std,
                    uint64_t seed, int64_t t0, int64_t steps, float* out) {
  const int64_t total = n * steps;
  if (total == 0) return;
  poisson_kernel<<<blocks_for(total), kThreads>>>(raw, n, C, inner, mean, std, seed, t0, total, out);
  check_launch("poisson_kernel", "cuda backend: Poisson input encoding");
}

void repeat_steps(const float* x, int64_t n, int64_t steps, float* out) {
  for (int64_t t = 0; t < steps; ++t)
    SNN_CUDA_CHECK(cudaMemcpy(out + t * n, x, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice),
                   "cuda backend: repeating a static output over the chunk's steps");
}

}  // namespace snn::cuda
