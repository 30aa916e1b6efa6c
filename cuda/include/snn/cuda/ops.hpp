// Device passes of the CUDA engine that belong to no layer: input preprocessing and Poisson encoding
// (the same arithmetic as the core's, so the encoded input is bit-identical), repeating a static output
// over a chunk's steps, per-step non-zero counts (for the accountant), deterministic per-channel sums
// (for calibration probes), and the anytime readout. Pointers are device pointers; launches are on the
// default stream; errors name the pass.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/cuda/context.hpp"

namespace snn::cuda {

// out[i] = (x[i] − mean[c]) / std[c] for x [n, C, inner] (c = (i / inner) % C).
void preprocess(const float* x, int64_t n, int64_t C, int64_t inner, const float* mean, const float* std, float* out);

// The Poisson rate code of raw images [B, C, inner] (n = B·C·inner elements) for steps t0..t0+steps−1:
// out[t·n + i] = philox::poisson_pixel(seed, t0 + t, i, raw[i], mean[c], std[c]); mean/std null = 0/1.
void poisson_encode(const float* raw, int64_t n, int64_t C, int64_t inner, const float* mean, const float* std,
                    uint64_t seed, int64_t t0, int64_t steps, float* out);

// out[t·n + i] = x[i] for t < steps.
void repeat_steps(const float* x, int64_t n, int64_t steps, float* out);

// out[t] += number of non-zero x[t·per_step + i], for t < steps (integer atomics: exact, any order).
void count_nonzero_steps(const float* x, int64_t per_step, int64_t steps, unsigned long long* out);

// Per-channel sums of x laid out [groups, outer, C, inner], over outer and inner, in double and in a
// fixed order (one block per channel and group, fixed tree), so they are reproducible run to run.
// Returns [groups · C] with index g·C + c.
std::vector<double> channel_sums(const float* x, int64_t groups, int64_t outer, int64_t C, int64_t inner,
                                 Context& context);

// One chunk of the anytime readout, in the CPU's order: for t < steps and image b,
//   acc[b][k] += y[(y_static ? 0 : t·B) + b][k] for k = 0..K−1, and pred[t·B + b] = the first k with the
//   largest acc[b][k] (a scan keeping the best where acc[k] > acc[best]).
void readout_chunk(const float* y, bool y_static, int64_t steps, int64_t B, int64_t K, float* acc, int32_t* pred);

// y[(o·C + c)·inner + i] += bias[c] for o < outer (a layer's bias after its GEMM or convolution).
void add_channel_bias(float* y, const float* bias, int64_t outer, int64_t C, int64_t inner, const std::string& where);

}  // namespace snn::cuda
