// Launch configuration, computed in one place: 1-D grids of kThreads threads with grid-stride loops,
// so any element count (int64) is covered whatever the grid limit.
#pragma once
#include <algorithm>
#include <cstdint>

namespace snn::cuda {

constexpr int kThreads = 256;

// Blocks for n elements at one element per thread, capped (the loop strides over the rest).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(b, int64_t(1) << 24)));
}

}  // namespace snn::cuda

// for (i over [0, n)) distributed over the whole grid.
#define SNN_GRID_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)
