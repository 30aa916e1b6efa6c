// A stateful per-plane stage that a neuron kernel can run on each (image, channel) plane of its spikes
// while the plane is still in cache: the CPU backend fuses a spiking max pooling into the neuron layer
// that alone feeds it, so the neuron layer's spikes (ResNet-18's stem: 3 MiB per image and step) are
// never written out and read back. The stage computes exactly what its own kernel's forward_snn would
// (that kernel runs its planes through the same function), so fused and unfused runs agree bit for bit.
#pragma once
#include <cstdint>

#include "snn/tensor.hpp"

namespace snn::cpu {

class KernelState;

class PlaneStage {
 public:
  virtual ~PlaneStage() = default;
  // Per-sample output shape [C, ...] and floats per input and output plane.
  virtual Shape stage_output_shape() const = 0;
  virtual int64_t plane_input_size() const = 0;
  virtual int64_t plane_output_size() const = 0;
  // Floats of scratch one call of step_plane needs (per thread).
  virtual int64_t plane_scratch_size() const = 0;
  // One step of plane p (image · C + channel) of `state` (made by the stage kernel's make_state):
  // reads plane_input_size() floats from in, writes plane_output_size() to out. Planes are independent
  // (callers run them in parallel); the steps of one plane must come in order.
  virtual void step_plane(const float* in, float* out, KernelState* state, int64_t p, float* scratch) const = 0;
};

}  // namespace snn::cpu
