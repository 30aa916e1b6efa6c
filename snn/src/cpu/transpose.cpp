#include "snn/cpu/transpose.hpp"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace snn::cpu {

namespace {

void transpose_scalar(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                      int64_t dst_stride) {
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) dst[j * dst_stride + i] = src[i * src_stride + j];
}

#if defined(__AVX512F__)
// One tile of up to 16×16: rows (< 16: the others read as zero) of 16 columns in, `rows` entries of each
// of 16 columns out (masked stores), so tails stay vectorised. The classic unpack (ps, pd), then
// 128-bit lane shuffles.
void transpose16(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int rows = 16) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * src_stride) : _mm512_setzero_ps();
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // r[4q + m] holds, in each 128-bit lane L, rows 4q..4q+3 of column 4L + m', where m' = {0, 1, 2, 3}
  // for m = {0, 1, 2, 3}. Gather the lanes: first pair quads (0,1) and (2,3), then across.
  for (int m = 0; m < 4; ++m) {
    const __m512 a = r[m], b = r[4 + m], c = r[8 + m], d = r[12 + m];
    const __m512 ab_lo = _mm512_shuffle_f32x4(a, b, 0x44), ab_hi = _mm512_shuffle_f32x4(a, b, 0xee);
    const __m512 cd_lo = _mm512_shuffle_f32x4(c, d, 0x44), cd_hi = _mm512_shuffle_f32x4(c, d, 0xee);
    t[m] = _mm512_shuffle_f32x4(ab_lo, cd_lo, 0x88);       // column m
    t[4 + m] = _mm512_shuffle_f32x4(ab_lo, cd_lo, 0xdd);   // column 4 + m
    t[8 + m] = _mm512_shuffle_f32x4(ab_hi, cd_hi, 0x88);   // column 8 + m
    t[12 + m] = _mm512_shuffle_f32x4(ab_hi, cd_hi, 0xdd);  // column 12 + m
  }
  if (rows == 16) {
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + j * dst_stride, t[j]);
  } else {
    const __mmask16 keep = __mmask16((1u << rows) - 1);
    for (int j = 0; j < 16; ++j) _mm512_mask_storeu_ps(dst + j * dst_stride, keep, t[j]);
  }
}
#endif

}  // namespace

void transpose_block(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                     int64_t dst_stride) {
#if defined(__AVX512F__)
  const int64_t rows16 = rows / 16 * 16, cols16 = cols / 16 * 16;
  for (int64_t i = 0; i < rows16; i += 16)
    for (int64_t j = 0; j < cols16; j += 16) transpose16(src + i * src_stride + j, src_stride, dst + j * dst_stride + i, dst_stride);
  if (rows16 < rows)  // the last rows, as partial tiles (ResNet-18's 56-wide bands: 8 of every 56)
    for (int64_t j = 0; j < cols16; j += 16)
      transpose16(src + rows16 * src_stride + j, src_stride, dst + j * dst_stride + rows16, dst_stride, int(rows - rows16));
  if (cols16 < cols) transpose_scalar(src + cols16, src_stride, rows, cols - cols16, dst + cols16 * dst_stride, dst_stride);
#else
  transpose_scalar(src, src_stride, rows, cols, dst, dst_stride);
#endif
}

void to_channels_last(const float* src, int64_t n, int64_t channels, int64_t positions, float* dst) {
  const int64_t size = channels * positions;
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < n; ++s) transpose_block(src + s * size, positions, channels, positions, dst + s * size, channels);
}

void to_channels_first(const float* src, int64_t n, int64_t channels, int64_t positions, float* dst) {
  const int64_t size = channels * positions;
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < n; ++s) transpose_block(src + s * size, channels, positions, channels, dst + s * size, positions);
}

}  // namespace snn::cpu
