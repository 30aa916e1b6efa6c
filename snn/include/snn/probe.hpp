// The calibration probe: how calibration methods look into a running simulation, on any backend,
// without copying activations to the host. The backend calls the probe around each neuron layer it
// runs on a chunk of timesteps, and hands it a NeuronLayerAccess that the backend implements:
// per-channel statistics, a replay of the layer's own neurons step by step (so a method calibrates the
// layer's real neuron model, never a retyped copy), and the layer's temporal bias in the running
// program. Biases change during a run only through set_bias, before the layer runs the chunk.
//
// Statistics come as sums, the form that data-parallel calibration adds across processes exactly:
// spike sums are whole multiples of θ_c, and ANN sums come per sample, to be added in sample order
// (conversion/shared_batch.hpp). The *_means conveniences divide by this process's own counts.
#pragma once
#include <cstdint>
#include <vector>

#include "snn/simulation_options.hpp"
#include "snn/tensor.hpp"

namespace snn {

class NeuronLayerAccess {
 public:
  virtual ~NeuronLayerAccess() = default;
  virtual int node() const = 0;
  virtual const StepChunk& chunk() const = 0;
  virtual int64_t channels() const = 0;

  // Neurons per channel per sample (H·W; 1 for a vector).
  virtual int64_t positions() const = 0;

  // Per-sample, per-channel sums over positions of this layer's ANN-view activation on the same images,
  // [batch · C] with index b·C + c. Needs NeuronProbe::wants_ann_reference().
  virtual const std::vector<double>& ann_sample_sums() = 0;
  // Their per-channel mean over this batch (samples added in order).
  std::vector<double> ann_channel_means();

  // Replays step t (0-based within the chunk) of this layer's neurons on the chunk's input, from the
  // probe's own membrane (it starts at v_init·θ at step 0 and carries across chunks; separate from the
  // membrane the layer itself runs with), with bias row `bias` ([C]). Returns the per-channel sum of the
  // spikes. commit = false leaves the probe's membrane as it was. nudge > 0 then moves every neuron's
  // membrane by −nudge·(s − a), a = its ANN activation (needs the ANN reference).
  virtual std::vector<double> replay_step_sums(int64_t t, const std::vector<float>& bias, bool commit,
                                               float nudge = 0.0f) = 0;
  // The same as per-channel means over this batch.
  std::vector<double> replay_step(int64_t t, const std::vector<float>& bias, bool commit, float nudge = 0.0f);

  // The layer's temporal bias as the running program uses it: [T_b, C], or empty for none.
  virtual Tensor bias() const = 0;
  virtual bool bias_constant() const = 0;
  // Only from before_layer: the layer then runs this chunk (and later ones) with the new bias.
  virtual void set_bias(const Tensor& bias, bool constant_over_time = false) = 0;

  // Only from after_layer: per-step, per-channel sum of the spikes the layer emitted in this chunk,
  // [steps · C] with index t·C + c; and the same as means over this batch.
  virtual const std::vector<double>& output_channel_sums() = 0;
  std::vector<double> output_channel_means();

 private:
  std::vector<double> per_neuron(std::vector<double> sums);  // sums / (batch · positions)
};

class NeuronProbe {
 public:
  virtual ~NeuronProbe() = default;
  // Whether the backend should run the ANN view of the batch first (for ann_channel_means and nudges).
  virtual bool wants_ann_reference() const { return false; }
  // Which neuron layers the probe looks at (others run without calls).
  virtual bool observes(int /*node*/) const { return true; }
  virtual void before_layer(NeuronLayerAccess& /*layer*/) {}
  virtual void after_layer(NeuronLayerAccess& /*layer*/) {}
  // Data-parallel runs: a backend that bases a choice on the data it holds (the CPU backend's
  // event-driven or dense path, from a layer's input density) passes its counts here first, so that
  // every process sharing the batch, and one process holding all of it, choose alike. The default (one
  // process) leaves them as they are.
  virtual void combine_counts(std::vector<int64_t>& /*counts*/) {}
};

}  // namespace snn
