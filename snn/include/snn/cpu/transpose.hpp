// Transposing a block between the event kernels' [position][channel] accumulators and NCHW planes.
#pragma once
#include <cstdint>

namespace snn::cpu {

// dst[j·dst_stride + i] = src[i·src_stride + j] for i < rows, j < cols. 16×16 tiles in registers where
// the machine has AVX-512.
void transpose_block(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                     int64_t dst_stride);

}  // namespace snn::cpu
