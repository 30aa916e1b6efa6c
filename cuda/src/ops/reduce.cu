// Reductions of the engine: per-step non-zero counts (spikes, events) and per-channel sums for probes.
// Both are reproducible: counts are integers (atomic adds commute exactly); channel sums are doubles
// summed in a fixed order (fixed thread-to-element map, fixed shared-memory tree, no atomics).
#include <algorithm>

#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/ops.hpp"

namespace snn::cuda {

namespace {

constexpr int64_t kMaxGridY = 65535;

__global__ void count_nonzero_kernel(const float* __restrict__ x, int64_t per_step, unsigned long long* out) {
  const int64_t t = blockIdx.y;
  const float* p = x + t * per_step;
  unsigned long long c = 0;
  SNN_GRID_LOOP(i, per_step) c += p[i] != 0.0f ? 1u : 0u;
  for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
  if ((threadIdx.x & 31) == 0 && c != 0) atomicAdd(out + t, c);
}

// Block (c, g) sums channel c of group g. Thread k takes elements k, k + kThreads, ... of the channel's
// outer·inner values; the block then adds the kThreads partial sums in a fixed tree.
__global__ void channel_sums_kernel(const float* __restrict__ x, int64_t outer, int64_t C, int64_t inner, int64_t g0,
                                    double* __restrict__ out) {
  const int64_t c = blockIdx.x, g = g0 + blockIdx.y, n = outer * inner;
  double s = 0.0;
  for (int64_t e = threadIdx.x; e < n; e += kThreads) {
    const int64_t o = e / inner, i = e - o * inner;
    s += double(x[((g * outer + o) * C + c) * inner + i]);
  }
  __shared__ double part[kThreads];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (int(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[g * C + c] = part[0];
}

}  // namespace

void count_nonzero_steps(const float* x, int64_t per_step, int64_t steps, unsigned long long* out) {
  if (per_step == 0 || steps == 0) return;
  const unsigned bx = std::min<unsigned>(blocks_for(per_step), 4096u);
  for (int64_t t0 = 0; t0 < steps; t0 += kMaxGridY) {
    const unsigned gy = unsigned(std::min(kMaxGridY, steps - t0));
    count_nonzero_kernel<<<dim3(bx, gy), kThreads>>>(x + t0 * per_step, per_step, out + t0);
    check_launch("count_nonzero_kernel", "cuda backend: counting spikes and events");
  }
}

std::vector<double> channel_sums(const float* x, int64_t groups, int64_t outer, int64_t C, int64_t inner,
                                 Context& context) {
  std::vector<double> host(size_t(groups * C), 0.0);
  if (host.empty()) return host;
  auto* out = static_cast<double*>(context.reduction(host.size() * sizeof(double)));
  if (outer * inner > 0) {
    for (int64_t g0 = 0; g0 < groups; g0 += kMaxGridY) {
      const unsigned gy = unsigned(std::min(kMaxGridY, groups - g0));
      channel_sums_kernel<<<dim3(unsigned(C), gy), kThreads>>>(x, outer, C, inner, g0, out);
      check_launch("channel_sums_kernel", "cuda backend: per-channel statistics for a probe");
    }
  } else {
    zero_device(out, host.size() * sizeof(double));
  }
  copy_to_host(host.data(), out, host.size() * sizeof(double));
  return host;
}

}  // namespace snn::cuda
