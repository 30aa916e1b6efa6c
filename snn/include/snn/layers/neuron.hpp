// NeuronLayer: a layer of integrate-and-fire (IF) or leaky IF neurons standing in for a CNN activation.
// Input [C, ...]: channel c shares threshold θ_c (scalar or per channel) and temporal bias b[t][c].
// ANN view: the source activation (ReLU, clip(0, θ), or QCFS with L levels). SNN view: the recurrence
// of neuron_core.hpp, state = membrane potential, initialised to v_init·θ.
#pragma once
#include "snn/layer.hpp"
#include "snn/neuron_core.hpp"

namespace snn {

class NeuronLayer : public Layer {
 public:
  // threshold: one value, or one per channel.
  NeuronLayer(std::string name, int64_t channels, std::vector<float> threshold,
              SourceActivation activation = SourceActivation::ReLU, int levels = 0, NeuronConfig config = {});

  std::string type() const override { return "neuron"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  bool stateful() const override { return true; }
  bool emits_spikes() const override { return true; }
  std::string summary() const override;
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<NeuronLayer>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);

  int64_t channels() const { return channels_; }
  const std::vector<float>& threshold() const { return threshold_; }
  float theta(int64_t c) const { return threshold_.size() == 1 ? threshold_[0] : threshold_[size_t(c)]; }
  // The SNN view's threshold and spike size: θ_c·threshold_scale (θ_c unless a calibration spread the
  // CNN's levels over more steps: NeuronConfig).
  float spike_threshold(int64_t c) const { return neuron::mul(theta(c), config_.threshold_scale); }
  void set_threshold(std::vector<float> threshold);
  SourceActivation activation() const { return activation_; }
  int levels() const { return levels_; }
  const NeuronConfig& config() const { return config_; }
  void set_config(const NeuronConfig& config);

  // The ANN-view activation of value x in channel c.
  float activate(float x, int64_t c) const { return neuron::activation(x, activation_, theta(c), levels_); }

  // Temporal bias b[t][c]: a [T_b, C] tensor. Steps t ≥ T_b use no bias, unless the bias is constant
  // over time (one row that applies to every step, as in time-independent calibrations).
  const Tensor& bias() const { return bias_; }
  int64_t bias_steps() const { return bias_.empty() ? 0 : bias_.dim(0); }
  bool bias_constant() const { return bias_constant_; }
  void set_bias(Tensor bias, bool constant_over_time = false);
  // Throws, naming the layer, unless bias is a valid temporal bias for this layer (set_bias's checks).
  void check_bias(const Tensor& bias, bool constant_over_time) const;
  void clear_bias();
  float bias_at(int64_t t, int64_t c) const {
    if (bias_.empty()) return 0.0f;
    if (bias_constant_) return bias_[c];
    return t < bias_.dim(0) ? bias_[t * channels_ + c] : 0.0f;
  }

 private:
  int64_t channels_;
  std::vector<float> threshold_;
  SourceActivation activation_;
  int levels_;
  NeuronConfig config_;
  Tensor bias_;
  bool bias_constant_ = false;
};

}  // namespace snn
