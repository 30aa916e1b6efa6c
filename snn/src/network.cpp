#include "snn/network.hpp"

#include <cmath>

#include "snn/checked_math.hpp"
#include "snn/error.hpp"

namespace snn {

Network::Network(Shape input_shape) { set_input_shape(std::move(input_shape)); }

Network::Network(const Network& other)
    : input_shape_(other.input_shape_), preprocessing_(other.preprocessing_), metadata_(other.metadata_) {
  for (const auto& n : other.nodes_) nodes_.push_back({n.layer->clone(), n.inputs, n.shape});
}

Network& Network::operator=(const Network& other) {
  if (this != &other) {
    Network copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void Network::set_input_shape(Shape shape) {
  require(nodes_.empty(), "the input shape can only be set on an empty network");
  require(!shape.empty() && numel_of(shape) > 0, "invalid network input shape " + to_string(shape));
  input_shape_ = std::move(shape);
}

void Network::set_preprocessing(Preprocessing p) {
  require(p.mean.size() == p.std.size(), "preprocessing: mean has " + std::to_string(p.mean.size()) +
                                             " values, std has " + std::to_string(p.std.size()));
  if (!p.mean.empty()) {
    require(!input_shape_.empty() && int64_t(p.mean.size()) == input_shape_[0],
            "preprocessing: " + std::to_string(p.mean.size()) + " mean/std values for an input with " +
                (input_shape_.empty() ? std::string("no") : std::to_string(input_shape_[0])) + " channels");
    for (float s : p.std) require(s > 0.0f && std::isfinite(s), "preprocessing: std must be positive");
  }
  preprocessing_ = std::move(p);
}

int Network::add(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  require(layer != nullptr, "Network::add: null layer");
  require(!input_shape_.empty(), "layer '" + layer->name() + "': set the network input shape first");
  require(find(layer->name()) == -2, "layer name '" + layer->name() + "' is used twice");
  if (inputs.empty()) inputs = {size() - 1};
  require(int(inputs.size()) == layer->arity(), "layer '" + layer->name() + "' (" + layer->type() + ") takes " +
                                                    std::to_string(layer->arity()) + " inputs, given " +
                                                    std::to_string(inputs.size()));
  std::vector<Shape> shapes;
  for (int i : inputs) {
    require(i >= kInput && i < size(), "layer '" + layer->name() + "': input node " + std::to_string(i) +
                                           " does not precede it");
    shapes.push_back(output_shape(i));
  }
  Shape out = layer->output_shape(shapes);
  nodes_.push_back({std::move(layer), std::move(inputs), std::move(out)});
  return size() - 1;
}

const Shape& Network::output_shape(int i) const {
  if (i == kInput) return input_shape_;
  return nodes_.at(size_t(i)).shape;
}

std::vector<Shape> Network::input_shapes(int i) const {
  std::vector<Shape> s;
  for (int j : inputs(i)) s.push_back(output_shape(j));
  return s;
}

int Network::find(const std::string& name) const {
  for (int i = 0; i < size(); ++i)
    if (nodes_[size_t(i)].layer->name() == name) return i;
  return -2;
}

std::vector<int> Network::neuron_nodes() const {
  std::vector<int> r;
  for (int i = 0; i < size(); ++i)
    if (dynamic_cast<const NeuronLayer*>(nodes_[size_t(i)].layer.get())) r.push_back(i);
  return r;
}

NeuronLayer& Network::neuron(int i) {
  auto* n = dynamic_cast<NeuronLayer*>(&layer(i));
  require(n != nullptr, "node " + std::to_string(i) + " ('" + layer(i).name() + "') is not a neuron layer");
  return *n;
}

const NeuronLayer& Network::neuron(int i) const { return const_cast<Network*>(this)->neuron(i); }

std::vector<int> Network::last_use() const {
  std::vector<int> last(size_t(size()), -1);
  for (int i = 0; i < size(); ++i)
    for (int j : inputs(i))
      if (j >= 0) last[size_t(j)] = i;
  return last;
}

void Network::validate() const {
  require(!nodes_.empty(), "the network has no layers");
  const Layer& out = layer(output_node());
  require(!out.stateful(), "the last layer ('" + out.name() + "', " + out.type() +
                               ") must be a non-spiking readout, e.g. linear");
  require(output_shape(output_node()).size() == 1,
          "the readout layer '" + out.name() + "' must produce a vector of class scores, got shape " +
              to_string(output_shape(output_node())));
}

int64_t Network::parameter_count() const {
  int64_t n = 0;
  for (const auto& node : nodes_) n += node.layer->parameter_count();
  return n;
}

int64_t Network::macs_per_sample() const {
  int64_t n = 0;
  for (int i = 0; i < size(); ++i) n = checked_add(n, layer(i).macs(input_shapes(i)), "the network's MAC count");
  return n;
}

void check_finite_parameters(const Network& net) {
  for (int i = 0; i < net.size(); ++i) check_finite(net.layer(i).to_record());
}

void check_input_shape(const Network& net, const Tensor& images) {
  Shape expect = {images.rank() ? images.dim(0) : 0};
  expect.insert(expect.end(), net.input_shape().begin(), net.input_shape().end());
  require(images.shape() == expect, "input images " + to_string(images.shape()) + " do not fit the network input " +
                                        to_string(net.input_shape()));
}

Tensor preprocess(const Network& net, const Tensor& images) {
  check_input_shape(net, images);
  const auto& p = net.preprocessing();
  if (p.identity()) return images;
  Tensor out(images.shape());
  const int64_t n = images.dim(0), c = images.dim(1), inner = images.numel() / std::max<int64_t>(1, n * c);
  for (int64_t s = 0; s < n; ++s)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float m = p.mean[size_t(ch)], sd = p.std[size_t(ch)];  // divide, as PyTorch does
      const float* in = images.data() + (s * c + ch) * inner;
      float* o = out.data() + (s * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) o[i] = (in[i] - m) / sd;
    }
  return out;
}

}  // namespace snn
