// Counter-based random numbers (Philox4x32-10, Salmon et al., SC 2011) for Poisson input encoding.
// A number depends only on (seed, timestep, element), not on the order it is drawn in, so the CPU and the
// CUDA backend produce the same input spikes for the same seed, however they split the work.
#pragma once
#include <cstdint>

#include "snn/hd.hpp"

namespace snn::philox {

SNN_HD uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  *hi = uint32_t(p >> 32);
  return uint32_t(p);
}

// Philox4x32 with 10 rounds: counter (c0..c3), key (k0, k1) -> 4 random words; returns the first.
SNN_HD uint32_t philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    const uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
}

// Uniform in [0, 1) with 24 random bits (exact in float) for element `index` at timestep `t`.
SNN_HD float uniform(uint64_t seed, uint64_t t, uint64_t index) {
  const uint32_t r = philox4x32_10(uint32_t(index), uint32_t(index >> 32), uint32_t(t), uint32_t(t >> 32),
                                   uint32_t(seed), uint32_t(seed >> 32));
  return float(r >> 8) * (1.0f / 16777216.0f);
}

// Poisson rate code of one raw pixel (probability = its intensity clamped to [0, 1]), then the network's
// per-channel normalisation (x − mean) / std, so the expected encoded input is the preprocessed image.
SNN_HD float poisson_pixel(uint64_t seed, uint64_t t, uint64_t index, float raw, float mean, float std) {
  const float p = raw < 0.0f ? 0.0f : (raw > 1.0f ? 1.0f : raw);
  const float spike = uniform(seed, t, index) < p ? 1.0f : 0.0f;
  return (spike - mean) / std;
}

}  // namespace snn::philox
