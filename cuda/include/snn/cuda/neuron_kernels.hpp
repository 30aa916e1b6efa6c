// Fused multi-timestep IF/LIF neuron kernel: one thread per neuron runs the whole chunk of steps with
// the membrane in a register, reading x[t] and writing s[t] (layout [steps, batch, C, inner]), with the
// per-step per-channel temporal bias. The CPU twin is snn::neuron_step (neuron_dynamics.hpp); the two
// must agree bit for bit on the same inputs (tests/cuda).
#pragma once
#include <cstdint>

#include "snn/neuron_dynamics.hpp"

namespace snn::cuda {

struct NeuronKernelArgs {
  const float* x = nullptr;          // [steps, batch, channels, inner] (device)
  float* s = nullptr;                // same layout: spikes 0 or θ_c (device)
  float* v = nullptr;                // [batch, channels, inner] membrane, updated in place (device)
  const float* theta = nullptr;      // [channels] (device)
  const float* bias = nullptr;       // [bias_steps, channels] or null (device)
  int64_t bias_steps = 0;            // rows in bias
  bool bias_constant = false;        // one row for every step
  int64_t t0 = 0, steps = 1, batch = 1, channels = 1, inner = 1;
  NeuronConfig config;
};

// Launches the kernel on the default stream (asynchronous). Throws snn::Error on launch failure.
void neuron_forward(const NeuronKernelArgs& args);

}  // namespace snn::cuda
