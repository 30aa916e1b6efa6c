#include "snn/layers/linear.hpp"

#include "snn/error.hpp"

namespace snn {

Linear::Linear(std::string name, Tensor weight, Tensor bias)
    : Layer(std::move(name)), weight_(std::move(weight)), bias_(std::move(bias)) {
  if (weight_.rank() != 2) fail("weight must be [out, in], got " + to_string(weight_.shape()));
  if (!bias_.empty() && bias_.shape() != Shape{weight_.dim(0)})
    fail("bias shape " + to_string(bias_.shape()) + ", expected [" + std::to_string(weight_.dim(0)) + "]");
}

Shape Linear::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1) fail("expects one input");
  if (numel_of(inputs[0]) != in_features())
    fail("input " + to_string(inputs[0]) + " has " + std::to_string(numel_of(inputs[0])) + " features, layer expects " +
         std::to_string(in_features()));
  return {out_features()};
}

int64_t Linear::macs(const std::vector<Shape>&) const { return weight_.numel(); }

std::string Linear::summary() const {
  return std::to_string(in_features()) + "->" + std::to_string(out_features()) + (bias_.empty() ? " no-bias" : "");
}

LayerRecord Linear::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.tensors["weight"] = weight_;
  if (!bias_.empty()) r.tensors["bias"] = bias_;
  return r;
}

std::unique_ptr<Layer> Linear::from_record(const LayerRecord& r) {
  auto it = r.tensors.find("bias");
  return std::make_unique<Linear>(r.name, r.tensor("weight"), it == r.tensors.end() ? Tensor() : it->second);
}

namespace {
const bool registered_linear = register_layer_type("linear", Linear::from_record);
}  // namespace

}  // namespace snn
