// The neuron core: the one definition of the spiking neuron that every backend kernel, every
// calibrator and every test reference calls (host and device). Per neuron and timestep t:
//   LIF only: v ← β·v;   v ← v + (x[t] − b[t][c]);   s = θ·[v ≥ θ];   reset: v ← v − s (subtract) or v ← 0 (zero)
// with v starting at v_init·θ and b[t][c] the layer's temporal bias (0 beyond its rows, unless it is
// one row constant over time). The ANN view of the same neuron is its source activation.
//
// Signed spikes (reset by subtraction only): a neuron that has fired more than its input now warrants
// sends a negative spike instead of keeping the excess, s = −θ when v < 0 and its net spike count n > 0
// (n counts +1 per positive, −1 per negative spike). Its net output then tracks the ReLU of its summed
// input, n·θ ≈ θ·round(Σx/θ) (for v_init = ½), at every step instead of only in the mean: the error of
// uneven inputs (early excitation, later inhibition) is taken back. A QCFS network with L levels run
// for T = L steps is then the CNN itself (Fast-SNN, Hu et al. TPAMI 2023; signed neurons, Wang et al.
// IJCAI 2022). The state is (v, n). A signed neuron may also cap its net count (max_spikes): with
// θ' = θ·T/L and a cap of L, T ≥ L steps carry exactly the CNN's L QCFS levels (n ≈ clamp(round(Σx/θ'),
// 0, L)), so a QCFS network is reproduced at t = T for any T ≥ L (calibration method "levels").
//
// Rounding is pinned so host and device agree bit for bit: no fused multiply-add (the host build uses
// -ffp-contract=off; the device path uses the explicitly rounded intrinsics).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "snn/hd.hpp"

namespace snn {

enum class NeuronModel { IF, LIF };
enum class Reset { Subtract, Zero };
// What the neuron stands for in the ANN view.
enum class SourceActivation { ReLU, Clip, QCFS };

// Binary spikes are 0 or θ; signed spikes are −θ, 0 or θ (see above).
enum class Spikes { Binary, Signed };

struct NeuronConfig {
  NeuronModel model = NeuronModel::IF;
  float beta = 1.0f;  // LIF leak factor; ignored for IF
  Reset reset = Reset::Subtract;
  float v_init = 0.5f;  // initial membrane potential as a fraction of θ
  Spikes spikes = Spikes::Binary;
  float max_spikes = kNoSpikeCap;  // signed neurons: the largest net spike count (a whole number), or none
  // Signed neurons: the SNN's threshold (and spike) is θ·threshold_scale, while the ANN view keeps θ.
  float threshold_scale = 1.0f;
  static constexpr float kNoSpikeCap = 3.0e38f;
};

std::string to_string(NeuronModel m);
std::string to_string(Reset r);
std::string to_string(SourceActivation a);
std::string to_string(Spikes s);
NeuronModel parse_neuron_model(const std::string& s);     // "if" | "lif"
Reset parse_reset(const std::string& s);                  // "subtract" | "zero"
SourceActivation parse_activation(const std::string& s);  // "relu" | "clip" | "qcfs"
Spikes parse_spikes(const std::string& s);                // "binary" | "signed"
// A front end's spike option: "binary", "signed", or "auto" (the converters' default): signed with
// reset by subtraction, binary with reset to zero (which discards the excess a negative spike would
// take back). Signed with reset to zero is refused, naming `option`.
Spikes resolve_spikes(const std::string& s, Reset reset, const std::string& option);

namespace neuron {

SNN_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SNN_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SNN_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

SNN_HD float initial_membrane(float v_init, float theta) { return mul(v_init, theta); }

// b[t][c] of a [bias_steps, channels] bias (null: none); one row constant over time applies to every t.
SNN_HD float temporal_bias(const float* bias, int64_t bias_steps, bool constant, int64_t t, int64_t channels,
                           int64_t c) {
  if (!bias) return 0.0f;
  if (constant) return bias[c];
  return t < bias_steps ? bias[t * channels + c] : 0.0f;
}

// One timestep of one neuron with the model and reset fixed at compile time (kernels' inner loops).
// Returns the spike (0 or θ); v is updated in place.
template <bool kLeaky, bool kResetZero>
SNN_HD float step(float& v, float x, float bias, float theta, float beta) {
  float vi = kLeaky ? mul(beta, v) : v;
  vi = add(vi, sub(x, bias));
  const float s = vi >= theta ? theta : 0.0f;
  v = kResetZero ? (s > 0.0f ? 0.0f : vi) : sub(vi, s);
  return s;
}

// One timestep of a signed neuron (reset by subtraction): returns −θ, 0 or θ; v and the net spike
// count n (a whole number held in a float: exact below 2^24) are updated in place. At the cap a
// neuron keeps its excess in v instead of firing (the CNN's clip at θ).
template <bool kLeaky>
SNN_HD float signed_step(float& v, float& n, float x, float bias, float theta, float beta, float max_spikes) {
  float vi = kLeaky ? mul(beta, v) : v;
  vi = add(vi, sub(x, bias));
  // Branch-free (the kernels' loops vectorise): sign is +1, −1 or 0, and every product and sum below is
  // exact, so this is the same as choosing s among θ, −θ and 0.
  const float up = (vi >= theta && n < max_spikes) ? 1.0f : 0.0f;
  const float down = (vi < 0.0f && n > 0.0f) ? 1.0f : 0.0f;
  const float sign = sub(up, down);
  const float s = mul(sign, theta);
  n = add(n, sign);
  v = sub(vi, s);
  return s;
}

// The same steps with the model chosen at run time (references, calibration replays). n is the signed
// neuron's net spike count; binary neurons leave it alone.
SNN_HD float step(float& v, float& n, float x, float bias, float theta, const NeuronConfig& cfg) {
  const bool leaky = cfg.model == NeuronModel::LIF, zero = cfg.reset == Reset::Zero;
  if (cfg.spikes == Spikes::Signed)
    return leaky ? signed_step<true>(v, n, x, bias, theta, cfg.beta, cfg.max_spikes)
                 : signed_step<false>(v, n, x, bias, theta, cfg.beta, cfg.max_spikes);
  if (leaky) return zero ? step<true, true>(v, x, bias, theta, cfg.beta) : step<true, false>(v, x, bias, theta, cfg.beta);
  return zero ? step<false, true>(v, x, bias, theta, cfg.beta) : step<false, false>(v, x, bias, theta, cfg.beta);
}

// Calls f(leaky, reset_zero) with std::integral_constant<bool, ...> arguments for the config: kernels
// instantiate their loop once per model/reset pair (step<decltype(leaky)::value, ...>), so the inner loop
// has no branches on the config.
template <class F>
SNN_HD void dispatch(const NeuronConfig& cfg, F&& f) {
  const bool leaky = cfg.model == NeuronModel::LIF, zero = cfg.reset == Reset::Zero;
  if (leaky && zero) f(std::true_type{}, std::true_type{});
  else if (leaky) f(std::true_type{}, std::false_type{});
  else if (zero) f(std::false_type{}, std::true_type{});
  else f(std::false_type{}, std::false_type{});
}

// The ANN view: ReLU, clip(0, θ), or QCFS with L levels, in the PyTorch QCFS module's operation order
// (clamp(x/θ, 0, 1), floor(y·L + 0.5)/L, times θ).
SNN_HD float activation(float x, SourceActivation act, float theta, int levels) {
  switch (act) {
    case SourceActivation::ReLU: return x > 0.0f ? x : 0.0f;
    case SourceActivation::Clip: return x < 0.0f ? 0.0f : (x > theta ? theta : x);
    case SourceActivation::QCFS: {
      float y = x / theta;
      y = y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
      y = floorf(add(mul(y, float(levels)), 0.5f)) / float(levels);
      return mul(y, theta);
    }
  }
  return x;
}

}  // namespace neuron
}  // namespace snn
