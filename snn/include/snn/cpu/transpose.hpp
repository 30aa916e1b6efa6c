// Transposing a block between the event kernels' [position][channel] accumulators and NCHW planes.
#pragma once
#include <cstdint>

namespace snn::cpu {

// dst[j·dst_stride + i] = src[i·src_stride + j] for i < rows, j < cols. 16×16 tiles in registers where
// the machine has AVX-512.
void transpose_block(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                     int64_t dst_stride);

// n samples of [channels][positions] (NCHW) to [positions][channels] (channels-last), or back; samples
// in parallel (the calling OpenMP team). dst must not overlap src.
void to_channels_last(const float* src, int64_t n, int64_t channels, int64_t positions, float* dst);
void to_channels_first(const float* src, int64_t n, int64_t channels, int64_t positions, float* dst);

}  // namespace snn::cpu
