#include <cuda_runtime.h>

#include "snn/cuda/neuron_kernels.hpp"
#include "snn/error.hpp"

namespace snn::cuda {

namespace {

// One thread per neuron (b, c, i); time runs inside the thread, so v never leaves its register and x/s
// are streamed once (coalesced along i). Template flags mirror neuron_step_kernel's.
template <bool kLeaky, bool kResetZero>
__global__ void neuron_chunk_kernel(NeuronKernelArgs a) {
  const int64_t per_step = a.batch * a.channels * a.inner;
  const int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (n >= per_step) return;
  const int64_t c = (n / a.inner) % a.channels;
  const float theta = a.theta[c];
  const float beta = a.config.beta;
  float v = a.v[n];
  for (int64_t t = 0; t < a.steps; ++t) {
    const int64_t tt = a.t0 + t;
    float b = 0.0f;
    if (a.bias) {
      if (a.bias_constant) b = a.bias[c];
      else if (tt < a.bias_steps) b = a.bias[tt * a.channels + c];
    }
    const float x = a.x[t * per_step + n];
    // Same operation order as the CPU twin: (leak) then v + (x − b), compare, reset.
    float vi = kLeaky ? __fmul_rn(beta, v) : v;  // no FMA contraction: bit-equal to the CPU
    vi = __fadd_rn(vi, __fsub_rn(x, b));
    const float s = vi >= theta ? theta : 0.0f;
    v = kResetZero ? (s > 0.0f ? 0.0f : vi) : vi - s;
    a.s[t * per_step + n] = s;
  }
  a.v[n] = v;
}

}  // namespace

void neuron_forward(const NeuronKernelArgs& a) {
  const int64_t per_step = a.batch * a.channels * a.inner;
  if (per_step == 0 || a.steps == 0) return;
  const int threads = 256;
  const unsigned blocks = unsigned((per_step + threads - 1) / threads);
  const bool leaky = a.config.model == NeuronModel::LIF, zero = a.config.reset == Reset::Zero;
  if (leaky && zero) neuron_chunk_kernel<true, true><<<blocks, threads>>>(a);
  else if (leaky) neuron_chunk_kernel<true, false><<<blocks, threads>>>(a);
  else if (zero) neuron_chunk_kernel<false, true><<<blocks, threads>>>(a);
  else neuron_chunk_kernel<false, false><<<blocks, threads>>>(a);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string("CUDA neuron kernel launch: ") + cudaGetErrorString(e));
}

}  // namespace snn::cuda
