// The spiking neuron recurrence, in one place: every backend (CPU engine, CUDA kernels, FTBC's local
// simulation) follows this reference. Per neuron and timestep:
//   LIF only: v ← β·v;   v ← v + x[t] − b[t];   s = θ·[v ≥ θ];   reset: v ← v − s (subtract) or v ← 0 (zero)
#pragma once
#include <cstdint>
#include <string>

namespace snn {

enum class NeuronModel { IF, LIF };
enum class Reset { Subtract, Zero };
// What the neuron stands for in the ANN view.
enum class SourceActivation { ReLU, Clip, QCFS };

struct NeuronConfig {
  NeuronModel model = NeuronModel::IF;
  float beta = 1.0f;  // LIF leak factor; ignored for IF
  Reset reset = Reset::Subtract;
  float v_init = 0.5f;  // initial membrane potential as a fraction of θ
};

std::string to_string(NeuronModel m);
std::string to_string(Reset r);
std::string to_string(SourceActivation a);
NeuronModel parse_neuron_model(const std::string& s);  // "if" | "lif"
Reset parse_reset(const std::string& s);              // "subtract" | "zero"
SourceActivation parse_activation(const std::string& s);  // "relu" | "clip" | "qcfs"

// One timestep for n neurons sharing θ and b (one channel of one image). s may alias nothing else.
template <bool kLeaky, bool kResetZero>
inline void neuron_step_kernel(const float* x, float* v, float* s, int64_t n, float theta, float bias, float beta) {
  for (int64_t i = 0; i < n; ++i) {
    float vi = kLeaky ? beta * v[i] : v[i];
    vi += x[i] - bias;
    const float si = vi >= theta ? theta : 0.0f;
    v[i] = kResetZero ? (si > 0.0f ? 0.0f : vi) : vi - si;
    s[i] = si;
  }
}

inline void neuron_step(const float* x, float* v, float* s, int64_t n, float theta, float bias,
                        const NeuronConfig& cfg) {
  const bool leaky = cfg.model == NeuronModel::LIF;
  const bool zero = cfg.reset == Reset::Zero;
  if (leaky) {
    if (zero) neuron_step_kernel<true, true>(x, v, s, n, theta, bias, cfg.beta);
    else neuron_step_kernel<true, false>(x, v, s, n, theta, bias, cfg.beta);
  } else {
    if (zero) neuron_step_kernel<false, true>(x, v, s, n, theta, bias, cfg.beta);
    else neuron_step_kernel<false, false>(x, v, s, n, theta, bias, cfg.beta);
  }
}

}  // namespace snn
