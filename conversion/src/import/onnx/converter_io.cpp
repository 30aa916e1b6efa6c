// The Converter's per-node helpers: inputs, attributes, emitting nodes and constants (onnx_convert.hpp).
#include <algorithm>
#include <cmath>

#include "import/onnx/onnx_convert.hpp"
#include "snn/error.hpp"

namespace snn::conversion::onnx {

bool Converter::has_input(size_t i) const { return i < node_->inputs.size() && !node_->inputs[i].empty(); }

int Converter::input(size_t i) const {
  if (!has_input(i)) return -1;
  auto it = ids_.find(node_->inputs[i]);
  if (it == ids_.end()) fail("input '" + node_->inputs[i] + "' is a padding folded into another node");
  return it->second;
}

bool Converter::all_inputs_const() const {
  for (size_t i = 0; i < node_->inputs.size(); ++i)
    if (has_input(i) && !is_const(input(i))) return false;
  return true;
}

const OpConstant& Converter::constant(size_t i) const {
  const int id = input(i);
  if (id < 0) fail("input " + std::to_string(i) + " is missing");
  if (!is_const(id))
    fail("input '" + node_->inputs[i] + "' must be a constant (computed from the image input it cannot be "
         "converted); export with static shapes");
  return graph_.values[size_t(id)].constant;
}

std::vector<int64_t> Converter::const_ints(size_t i) const {
  const OpConstant& c = constant(i);
  if (c.is_int) return c.ints;
  std::vector<int64_t> out;
  for (float v : c.values) {
    if (!(std::fabs(v) < 9e18f) || float(int64_t(v)) != v) fail("input '" + node_->inputs[i] + "' must hold integers");
    out.push_back(int64_t(v));
  }
  return out;
}

snn::Shape Converter::input_shape(size_t i) const {
  const int id = input(i);
  if (id < 0) fail("input " + std::to_string(i) + " is missing");
  const OpValue& v = graph_.values[size_t(id)];
  if (!v.is_constant && v.shape.empty())
    fail("the shape of input '" + node_->inputs[i] + "' is unknown (it follows an op snnc does not map); "
         "snnc needs static shapes here");
  return v.is_constant ? v.constant.shape : v.shape;
}

const std::vector<const Node*>& Converter::consumers(size_t i) const {
  static const std::vector<const Node*> none;
  if (i >= node_->outputs.size()) return none;
  auto it = consumers_.find(node_->outputs[i]);
  return it == consumers_.end() ? none : it->second;
}

bool Converter::is_graph_output(size_t i) const {
  if (i >= node_->outputs.size() || node_->outputs[i].empty()) return false;
  for (const ValueInfo& v : model_.graph.outputs)
    if (v.name == node_->outputs[i]) return true;
  return false;
}

bool Converter::output_used(size_t i) const {
  if (i >= node_->outputs.size() || node_->outputs[i].empty()) return false;
  return !consumers(i).empty() || is_graph_output(i);
}

int64_t Converter::attr_int(const std::string& name, int64_t fallback) const {
  const Attribute* a = node_->find(name);
  if (!a) return fallback;
  if (a->type != kAttrInt && a->type != kAttrUndefined) fail("attribute '" + name + "' is not an integer");
  return a->i;
}

double Converter::attr_float(const std::string& name, double fallback) const {
  const Attribute* a = node_->find(name);
  if (!a) return fallback;
  if (a->type == kAttrInt) return double(a->i);
  if (a->type != kAttrFloat && a->type != kAttrUndefined) fail("attribute '" + name + "' is not a number");
  return a->f;
}

std::string Converter::attr_string(const std::string& name, const std::string& fallback) const {
  const Attribute* a = node_->find(name);
  if (!a) return fallback;
  if (a->type != kAttrString && a->type != kAttrUndefined) fail("attribute '" + name + "' is not a string");
  return a->s;
}

std::vector<int64_t> Converter::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const Attribute* a = node_->find(name);
  if (!a) return fallback;
  if (a->type != kAttrInts && a->type != kAttrUndefined) fail("attribute '" + name + "' is not a list of integers");
  return a->ints;
}

std::vector<double> Converter::attr_floats(const std::string& name, std::vector<double> fallback) const {
  const Attribute* a = node_->find(name);
  if (!a) return fallback;
  if (a->type != kAttrFloats && a->type != kAttrUndefined) fail("attribute '" + name + "' is not a list of floats");
  return std::vector<double>(a->floats.begin(), a->floats.end());
}

const Tensor* Converter::attr_tensor(const std::string& name) const {
  const Attribute* a = node_->find(name);
  return a && a->t ? &*a->t : nullptr;
}

OpConstant Converter::tensor_constant(const Tensor& t, const std::string& what) const {
  return to_constant(t, tensors_, "node '" + node_->name + "' (" + node_->op_type + "), " + what);
}

void Converter::bind_constant(size_t i, OpConstant c) {
  if (i >= node_->outputs.size() || node_->outputs[i].empty()) return;
  ids_[node_->outputs[i]] = graph_.add_constant(node_->outputs[i], std::move(c));
}

int Converter::new_constant(const std::string& suffix, OpConstant c) {
  return graph_.add_constant((node_->name.empty() ? node_->op_type : node_->name) + "/" + suffix, std::move(c));
}

int Converter::output_value(size_t i, snn::Shape shape) {
  const std::string& name = node_->outputs[i];
  auto d = declared_.find(name);
  if (d != declared_.end()) {
    if (shape.empty()) shape = d->second;
    else if (shape != d->second)
      fail("output '" + name + "': snnc computes shape " + snn::to_string(shape) + " but the file declares " +
           snn::to_string(d->second) + "; the file is inconsistent");
  }
  OpValue v;
  v.name = name;
  v.shape = std::move(shape);
  return ids_[name] = graph_.add_value(std::move(v));
}

OpNode& Converter::emit_into(const std::string& op, std::vector<int> inputs, std::vector<int> outputs) {
  OpNode n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.name = node_->name.empty() ? (node_->outputs.empty() ? node_->op_type : node_->outputs[0]) : node_->name;
  n.source_op = (node_->domain.empty() || node_->domain == "ai.onnx" ? "" : node_->domain + "::") + node_->op_type;
  set_scope(n);
  graph_.nodes.push_back(std::move(n));
  return graph_.nodes.back();
}

OpNode& Converter::emit(const std::string& op, std::vector<int> inputs, std::vector<snn::Shape> out_shapes) {
  std::vector<int> outs;
  for (size_t i = 0; i < out_shapes.size() && i < node_->outputs.size(); ++i)
    outs.push_back(node_->outputs[i].empty() ? add_intermediate("unused" + std::to_string(i), out_shapes[i])
                                             : output_value(i, std::move(out_shapes[i])));
  return emit_into(op, std::move(inputs), std::move(outs));
}

int Converter::add_intermediate(const std::string& suffix, snn::Shape shape) {
  OpValue v;
  v.name = (node_->outputs.empty() ? node_->name : node_->outputs[0]) + "/" + suffix;
  v.shape = std::move(shape);
  return graph_.add_value(std::move(v));
}

void Converter::unmapped(const std::string& op, const std::string& why) {
  std::vector<int> ins;
  for (size_t i = 0; i < node_->inputs.size(); ++i) ins.push_back(has_input(i) && ids_.count(node_->inputs[i]) ? input(i) : -1);
  emit(op, ins, std::vector<snn::Shape>(node_->outputs.size()));
  if (!why.empty()) note("node '" + graph_.nodes.back().name + "' (" + node_->op_type + ") left unmapped as '" + op + "': " + why);
}

bool Converter::take_pad(size_t in, int& source, std::vector<int64_t>& pads) const {
  if (!has_input(in)) return false;
  auto it = pads_.find(node_->inputs[in]);
  if (it == pads_.end()) return false;
  source = it->second.first;
  pads = it->second.second;
  return true;
}

snn::Shape known_shape(const Converter& c, size_t i) {
  const int id = c.input(i);
  if (id < 0) return {};
  return c.is_const(id) ? c.constant(i).shape : c.shape(id);
}

int64_t axis_in(const Converter& c, int64_t axis, size_t rank) {
  const int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

std::vector<int64_t> same_pads(const std::string& mode, const snn::Shape& in_hw, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations) {
  std::vector<int64_t> pads(4, 0);
  for (size_t d = 0; d < 2; ++d) {
    const int64_t out = (in_hw[d] + strides[d] - 1) / strides[d];
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in_hw[d]);
    const int64_t small = total / 2, large = total - small;
    pads[d] = mode == "SAME_LOWER" ? large : small;  // SAME_UPPER puts the extra padding at the end
    pads[d + 2] = mode == "SAME_LOWER" ? small : large;
  }
  return pads;
}

}  // namespace snn::conversion::onnx
