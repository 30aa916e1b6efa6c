// snn::Layer: one node of the network graph. A layer computes its ANN view (forward) on a batch of
// samples; stateless layers use the same code in the SNN view, where the batch holds steps*batch samples
// (sample index = t*batch + b). Stateful layers (neurons, spiking max pooling) override forward_snn and
// keep their state in a LayerState owned by the engine, so one Network can be simulated concurrently.
//
// New layer types (neuron models, pooling rules) subclass Layer and register a factory so that model
// files can name them (see register_layer_type).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "snn/tensor.hpp"

namespace snn {

// The slice of time a stateful layer is asked to simulate.
struct StepChunk {
  int64_t t0 = 0;     // first timestep of the chunk, 0-based
  int64_t steps = 1;  // timesteps in the chunk
  int64_t batch = 1;  // images; tensors hold steps*batch samples
};

class LayerState {
 public:
  virtual ~LayerState() = default;
};

// A layer as data: what model files store. Inputs (graph edges) are stored by the Network, not here.
struct LayerRecord {
  std::string type;
  std::string name;
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;

  // Accessors that throw an Error naming the layer and the missing key.
  const Tensor& tensor(const std::string& key) const;
  double number(const std::string& key) const;
  double number_or(const std::string& key, double fallback) const;
  const std::string& string(const std::string& key) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;

  virtual std::string type() const = 0;
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  virtual int arity() const { return 1; }
  // Per-sample output shape (no batch dimension) from per-sample input shapes; throws naming the layer.
  virtual Shape output_shape(const std::vector<Shape>& inputs) const = 0;
  // ANN view on a batch: inputs [N, ...] -> out [N, ...] (out is resized by the layer).
  virtual void forward(const std::vector<const Tensor*>& inputs, Tensor& out) const = 0;

  // SNN view. Stateless layers need not override these.
  virtual bool stateful() const { return false; }
  virtual std::unique_ptr<LayerState> make_state(const std::vector<Shape>& inputs, int64_t batch) const;
  virtual void forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, LayerState* state,
                           const StepChunk& chunk) const;
  // True when the output is a spike train (values 0 or θ): the next weight layer does accumulates.
  virtual bool emits_spikes() const { return false; }
  // True when this layer passes events through unchanged in kind (pooling, flatten, add).
  virtual bool preserves_events() const { return false; }

  // Cost model: multiply-accumulates per sample of the ANN view (weight layers only).
  virtual int64_t macs(const std::vector<Shape>& /*inputs*/) const { return 0; }
  virtual int64_t parameter_count() const { return 0; }
  // One line of human-readable attributes for `snnc info`.
  virtual std::string summary() const { return ""; }

  virtual LayerRecord to_record() const = 0;
  virtual std::unique_ptr<Layer> clone() const = 0;

 protected:
  // Throws Error("layer 'name' (type): message").
  [[noreturn]] void fail(const std::string& message) const;

 private:
  std::string name_;
};

using LayerFactory = std::function<std::unique_ptr<Layer>(const LayerRecord&)>;
// Makes a layer type loadable from model files. Built-in types are registered already.
void register_layer_type(const std::string& type, LayerFactory factory);
std::unique_ptr<Layer> layer_from_record(const LayerRecord& record);

}  // namespace snn
