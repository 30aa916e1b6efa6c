// snn::Layer: one node of the network graph, as a description: its parameters, shape rules, model-file
// record, cost model and capability flags. Layers do not compute: backends do, with one kernel per layer
// type (snn/cpu/kernel.hpp, cuda/). In the SNN view a stateless layer is applied to every timestep
// independently; a stateful one (neurons, spiking max pooling) carries state across timesteps.
//
// New layer types (neuron models, pooling rules) subclass Layer, register a factory so that model files
// can name them (register_layer_type), and add one kernel file per backend.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "snn/tensor.hpp"

namespace snn {

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
  // A size or count (channels, kernel, stride, padding…): an integer in [0, 2^31), else an Error.
  int64_t count(const std::string& key) const;
  const std::string& string(const std::string& key) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
};

// Throws an Error naming the layer and the tensor (with the element index) or attribute when a number
// is NaN or infinite: a network with such a parameter computes garbage without any other sign.
void check_finite(const LayerRecord& record);

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
  // SNN view: true when the output at step t depends on earlier steps (the layer carries state).
  virtual bool stateful() const { return false; }
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
// Makes a layer type loadable from model files. Each layer's own file registers it at start-up:
//   namespace { const bool registered = register_layer_type("conv2d", Conv2d::from_record); }
bool register_layer_type(const std::string& type, LayerFactory factory);
std::unique_ptr<Layer> layer_from_record(const LayerRecord& record);

}  // namespace snn
