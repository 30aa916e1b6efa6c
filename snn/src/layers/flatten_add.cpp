// The two shape-only layers: Flatten and Add.
#include "snn/error.hpp"
#include "snn/layers/add.hpp"
#include "snn/layers/flatten.hpp"

namespace snn {

Shape Flatten::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1) fail("expects one input");
  return {numel_of(inputs[0])};
}

LayerRecord Flatten::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  return r;
}

std::unique_ptr<Layer> Flatten::from_record(const LayerRecord& r) { return std::make_unique<Flatten>(r.name); }

Shape Add::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 2) fail("expects two inputs");
  if (inputs[0] != inputs[1]) fail("input shapes differ: " + to_string(inputs[0]) + " and " + to_string(inputs[1]));
  return inputs[0];
}

LayerRecord Add::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  return r;
}

std::unique_ptr<Layer> Add::from_record(const LayerRecord& r) { return std::make_unique<Add>(r.name); }

namespace {
const bool registered_flatten = register_layer_type("flatten", Flatten::from_record);
const bool registered_add = register_layer_type("add", Add::from_record);
}  // namespace

}  // namespace snn
