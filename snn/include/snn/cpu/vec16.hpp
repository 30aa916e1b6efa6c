// 16 floats as one value (GCC vector extension): one AVX-512 register where the machine has them,
// split by the compiler into narrower registers elsewhere. Unaligned loads and stores.
#pragma once
#include <cstring>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace snn::cpu {

typedef float Vec16 __attribute__((vector_size(64)));

inline Vec16 load16(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store16(float* p, Vec16 v) { std::memcpy(p, &v, sizeof v); }

// acc + v·w, fused (one rounding) where the machine has FMA: the event kernels' accumulation. The project
// otherwise builds with -ffp-contract=off, so this is the only place results depend on FMA hardware.
inline Vec16 fma16(Vec16 acc, float v, Vec16 w) {
#if defined(__AVX512F__)
  return (Vec16)_mm512_fmadd_ps((__m512)w, _mm512_set1_ps(v), (__m512)acc);
#elif defined(__FMA__)
  typedef float Vec8 __attribute__((vector_size(32)));
  Vec8 a[2], b[2];
  std::memcpy(a, &acc, sizeof a);
  std::memcpy(b, &w, sizeof b);
  for (int i = 0; i < 2; ++i) a[i] = (Vec8)_mm256_fmadd_ps((__m256)b[i], _mm256_set1_ps(v), (__m256)a[i]);
  std::memcpy(&acc, a, sizeof a);
  return acc;
#else
  return acc + v * w;
#endif
}

}  // namespace snn::cpu
