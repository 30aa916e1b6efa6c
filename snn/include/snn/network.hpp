// snn::Network: a DAG of layers in topological order (a layer's inputs are earlier nodes or the network
// input, index kInput). Shapes are inferred when a layer is added, so a wrong network fails at
// construction with the layer's name. The last node is the readout (non-spiking; its outputs are summed
// over time). The network also carries the input preprocessing and free-form provenance metadata.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "snn/layer.hpp"
#include "snn/layers/neuron.hpp"

namespace snn {

// Per-channel input normalisation (x − mean) / std, applied by every backend before the first layer.
struct Preprocessing {
  std::vector<float> mean;  // empty: no normalisation
  std::vector<float> std;
  bool identity() const { return mean.empty(); }
};

class Network {
 public:
  static constexpr int kInput = -1;

  Network() = default;
  explicit Network(Shape input_shape);  // per-sample input shape, e.g. {1, 28, 28}
  Network(const Network& other);
  Network& operator=(const Network& other);
  Network(Network&&) = default;
  Network& operator=(Network&&) = default;

  const Shape& input_shape() const { return input_shape_; }
  void set_input_shape(Shape shape);  // only on an empty network

  const Preprocessing& preprocessing() const { return preprocessing_; }
  void set_preprocessing(Preprocessing p);  // sizes must be 0 or the input channel count

  // Appends a layer; inputs default to the previous node (or the network input for the first layer).
  // Returns the new node's index. Throws, naming the layer, if inputs or shapes do not fit.
  int add(std::unique_ptr<Layer> layer, std::vector<int> inputs = {});
  template <class L, class... Args>
  L& emplace(std::vector<int> inputs, Args&&... args) {
    int i = add(std::make_unique<L>(std::forward<Args>(args)...), std::move(inputs));
    return static_cast<L&>(layer(i));
  }

  int size() const { return static_cast<int>(nodes_.size()); }
  bool empty() const { return nodes_.empty(); }
  const Layer& layer(int i) const { return *nodes_.at(size_t(i)).layer; }
  Layer& layer(int i) { return *nodes_.at(size_t(i)).layer; }
  const std::vector<int>& inputs(int i) const { return nodes_.at(size_t(i)).inputs; }
  const Shape& output_shape(int i) const;  // per sample; kInput gives the input shape
  std::vector<Shape> input_shapes(int i) const;
  int output_node() const { return size() - 1; }
  int find(const std::string& name) const;  // -2 when absent

  std::vector<int> neuron_nodes() const;  // indices of NeuronLayer nodes, in order
  NeuronLayer& neuron(int i);             // throws if node i is not a NeuronLayer
  const NeuronLayer& neuron(int i) const;
  // For each node, the index of the last node that reads it (or -1): lets engines free buffers early.
  std::vector<int> last_use() const;

  // Checks the readout and the graph; throws naming what is wrong. Engines call it before running.
  void validate() const;

  int64_t parameter_count() const;
  int64_t macs_per_sample() const;  // the CNN's multiply-accumulates per image

  std::map<std::string, std::string>& metadata() { return metadata_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  struct Node {
    std::unique_ptr<Layer> layer;
    std::vector<int> inputs;
    Shape shape;
  };
  Shape input_shape_;
  Preprocessing preprocessing_;
  std::vector<Node> nodes_;
  std::map<std::string, std::string> metadata_;
};

// Throws unless images are [N, input shape...] (every backend checks its input this way).
// Throws an Error naming the layer, the tensor and the element when a parameter is NaN or infinite.
void check_finite_parameters(const Network& net);

void check_input_shape(const Network& net, const Tensor& images);
// Applies the network's preprocessing to raw images [N, C, H, W] (values as the dataset gives them).
Tensor preprocess(const Network& net, const Tensor& images);

}  // namespace snn
