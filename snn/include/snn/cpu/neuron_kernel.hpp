// The CPU kernel of neuron layers, and the interface every spiking kernel on the CPU offers to
// calibration: its temporal bias (the program's copy) and a step-by-step replay of its own neurons.
// A new neuron model implements SpikingKernel, so calibration drives the model's real dynamics.
#pragma once
#include <vector>

#include "snn/cpu/kernel.hpp"
#include "snn/cpu/plane_stage.hpp"
#include "snn/layers/neuron.hpp"

namespace snn::cpu {

class SpikingKernel : public Kernel {
 public:
  virtual int64_t channels() const = 0;
  virtual const Tensor& bias() const = 0;
  virtual bool bias_constant() const = 0;
  virtual void set_bias(const Tensor& bias, bool constant_over_time) = 0;

  // Calibration replay of step t (0-based within the chunk) of input x ([steps·B, ...]) from `state`
  // (made by make_state) with bias row `bias` ([C]). Adds each channel's spike sum (over batch and
  // positions) to channel_sum. commit = false restores the state. nudge > 0 (needs `ann`, [B, ...]):
  // then v −= nudge·(s − a) per neuron.
  virtual void replay_step(const Tensor& x, const StepChunk& chunk, int64_t t, const float* bias, KernelState* state,
                           bool commit, float nudge, const Tensor* ann, std::vector<double>& channel_sum) = 0;
};

// IF/LIF neurons (NeuronLayer): membrane per neuron, the recurrence of neuron_core.hpp over each chunk.
class NeuronKernel : public SpikingKernel {
 public:
  NeuronKernel(const NeuronLayer& layer, const Shape& input);
  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override;
  std::unique_ptr<KernelState> make_state(int64_t batch) const override;
  bool reset_state(KernelState& state) const override;
  // inputs: the layer's input, or (a residual add fused into this layer by the backend) the add's two
  // inputs, summed here exactly as the add would have.
  void forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState* state,
                   const StepChunk& chunk) override;
  // forward_snn with `stage` (the sole reader's plane recurrence, e.g. spiking max pooling) run on each
  // plane of spikes as it is made: stage_out gets the stage's output ([steps·B, stage shape]), the
  // spikes themselves are not stored; output_nonzeros() still counts them.
  void forward_snn_staged(const std::vector<const Tensor*>& inputs, Tensor& stage_out, KernelState* state,
                          const StepChunk& chunk, const PlaneStage& stage, KernelState* stage_state);

  bool reads_static_inputs() const override { return true; }
  const std::vector<int64_t>* output_nonzeros() const override { return &output_nonzeros_; }
  int64_t channels() const override { return layer_.channels(); }
  const Tensor& bias() const override { return bias_; }
  bool bias_constant() const override { return bias_constant_; }
  void set_bias(const Tensor& bias, bool constant_over_time) override;
  void replay_step(const Tensor& x, const StepChunk& chunk, int64_t t, const float* bias, KernelState* state,
                   bool commit, float nudge, const Tensor* ann, std::vector<double>& channel_sum) override;

  struct State : KernelState {
    Tensor v;      // [batch, C, ...], or channels-last [batch, ..., C]
    Tensor count;  // signed neurons: net spike counts, laid out as v; empty for binary ones
    bool channels_last = false;
  };
  // Channels-last runs (inputs, output and state in that layout; the backend's choice, kernel.hpp):
  // lays the state out so, reset, where it was not already.
  bool supports_channels_last() const override { return true; }
  void set_state_layout(KernelState& state, bool channels_last) const;

 private:
  void run_channels_last(const Tensor& x, const Tensor* x2, int64_t x_stride, int64_t x2_stride, Tensor& out,
                         State& st, const StepChunk& chunk);
  void run_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState* state, const StepChunk& chunk,
               const PlaneStage* stage, KernelState* stage_state);

  const NeuronLayer& layer_;
  int64_t inner_;  // positions per channel
  Tensor bias_;
  bool bias_constant_ = false;
  std::vector<int64_t> output_nonzeros_;  // per step of the last forward_snn
};

}  // namespace snn::cpu
