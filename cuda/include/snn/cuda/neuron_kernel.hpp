// The CUDA kernel of neuron layers, and the interface every spiking kernel on the GPU offers to
// calibration (the twin of snn/cpu/neuron_kernel.hpp): its temporal bias (the program's copy, on the
// device, with a host mirror) and a step-by-step replay of its own neurons. The neuron math is
// snn/neuron_core.hpp's, compiled for the device: spikes and membranes are bit-identical to the CPU's.
#pragma once
#include <vector>

#include "snn/cuda/kernel.hpp"
#include "snn/layers/neuron.hpp"

namespace snn::cuda {

class SpikingKernel : public Kernel {
 public:
  virtual int64_t channels() const = 0;
  virtual const Tensor& bias() const = 0;  // host mirror of the device copy
  virtual bool bias_constant() const = 0;
  virtual void set_bias(const Tensor& bias, bool constant_over_time) = 0;  // checks, then uploads

  // Calibration replay of step t (0-based within the chunk) of input x ([steps·B, ...], device) from
  // `state` (made by make_state) with bias row `bias` ([C], host). Adds each channel's spike sum (over
  // batch and positions, in double, in a fixed order on the device) to channel_sum. commit = false
  // leaves the state as it was. nudge > 0 (needs `ann`, [B, ...] on the device): v −= nudge·(s − a).
  virtual void replay_step(const DeviceTensor& x, const StepChunk& chunk, int64_t t, const std::vector<float>& bias,
                           KernelState* state, bool commit, float nudge, const DeviceTensor* ann,
                           std::vector<double>& channel_sum) = 0;
};

// IF/LIF neurons (NeuronLayer). SNN view: one thread per neuron runs the whole chunk with the membrane in
// a register, reading x[t] once and writing s[t] once. ANN view: the source activation.
class NeuronKernel : public SpikingKernel {
 public:
  NeuronKernel(const NeuronLayer& layer, const Shape& input, Context& context);
  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override;
  std::unique_ptr<KernelState> make_state(int64_t batch) const override;
  void forward_snn(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out, KernelState* state,
                   const StepChunk& chunk) override;

  int64_t channels() const override { return layer_.channels(); }
  const Tensor& bias() const override { return bias_; }
  bool bias_constant() const override { return bias_constant_; }
  void set_bias(const Tensor& bias, bool constant_over_time) override;
  void replay_step(const DeviceTensor& x, const StepChunk& chunk, int64_t t, const std::vector<float>& bias,
                   KernelState* state, bool commit, float nudge, const DeviceTensor* ann,
                   std::vector<double>& channel_sum) override;

  struct State : KernelState {
    DeviceTensor v;           // [batch, C, ...] membranes
    DeviceTensor count;       // signed neurons: [batch, C, ...] net spike counts; empty for binary ones
    DeviceTensor spikes;      // replay scratch: one step's spikes
    DeviceBuffer<float> row;  // replay scratch: the bias row
  };

 private:
  const NeuronLayer& layer_;
  Context& context_;
  std::string where_;
  int64_t inner_;              // positions per channel
  DeviceBuffer<float> theta_;        // [C]: θ, the ANN view's
  DeviceBuffer<float> spike_theta_;  // [C]: the SNN's threshold and spike (NeuronLayer::spike_threshold)
  Tensor bias_;
  bool bias_constant_ = false;
  DeviceBuffer<float> bias_device_;
};

}  // namespace snn::cuda
