// The Converter's core: graph inputs and initializers, the node loop, scopes, the output, pruning.
#include "import/onnx/onnx_convert.hpp"

#include <algorithm>
#include <set>

#include "import/onnx/const_fold.hpp"
#include "import/onnx/scope.hpp"
#include "snn/error.hpp"

namespace snn::conversion::onnx {

namespace {

constexpr int64_t kNewestOpset = 28;  // what onnx 1.23 defines

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

const HandlerTable& handlers() {
  static const HandlerTable table = [] {
    HandlerTable t;
    add_nn_handlers(t);
    add_pool_handlers(t);
    add_tensor_handlers(t);
    add_shape_handlers(t);
    return t;
  }();
  return table;
}

}  // namespace

Converter::Converter(const std::string& path, const Model& model) : path_(path), model_(model) {
  tensors_ = TensorSource{path, folder_of(path), &graph_.notes};
  graph_.format = "ONNX";
}

void Converter::fail(const std::string& message) const {
  if (!node_) throw snn::Error(path_ + ": " + message);
  throw snn::Error(path_ + ": node '" + node_->name + "' (" + (node_->domain.empty() ? "" : node_->domain + "::") +
                   node_->op_type + "): " + message);
}

std::string Converter::producer() const {
  std::string s = model_.producer_name.empty() ? "unknown producer" : model_.producer_name;
  if (!model_.producer_version.empty()) s += " " + model_.producer_version;
  return s + " (ONNX opset " + std::to_string(opset_) + ", IR version " + std::to_string(model_.ir_version) + ")";
}

OpGraph Converter::run() {
  if (!model_.has_graph) fail("not a valid ONNX model (no graph)");
  for (const OpsetId& o : model_.opsets)
    if (o.domain.empty() || o.domain == "ai.onnx") opset_ = o.version;
  if (opset_ == 0) fail("the model imports no default-domain opset; not a model snnc can read");
  if (opset_ < 7) fail("opset " + std::to_string(opset_) + " is older than snnc reads (7+); re-export with opset 13 or newer");
  if (opset_ > kNewestOpset) note("opset " + std::to_string(opset_) + " is newer than the opsets snnc knows (up to " +
                                  std::to_string(kNewestOpset) + "); ops read with their newest known semantics");
  if (model_.functions) note(std::to_string(model_.functions) + " model-local functions not read: nodes calling them stay unmapped");
  graph_.producer = producer();
  if (model_.graph.sparse_initializers) fail("the graph has sparse initializers, which snnc does not read");
  for (const Node& n : model_.graph.nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty()) consumers_[in].push_back(&n);
  add_inputs_and_initializers();
  declare_shapes();
  const HandlerTable& table = handlers();
  for (const Node& n : model_.graph.nodes) convert_node(n, table);
  node_ = nullptr;
  finish_output();
  prune();
  return std::move(graph_);
}

void Converter::add_inputs_and_initializers() {
  std::set<std::string> init_names;
  for (const Tensor& t : model_.graph.initializers) {
    if (t.name.empty()) fail("an initializer has no name");
    if (!init_names.insert(t.name).second) fail("initializer '" + t.name + "' is defined twice");
    ids_[t.name] = graph_.add_constant(t.name, to_constant(t, tensors_, "initializer '" + t.name + "'"));
  }
  std::vector<const ValueInfo*> inputs;
  for (const ValueInfo& v : model_.graph.inputs)
    if (!init_names.count(v.name)) inputs.push_back(&v);  // IR < 4 lists initializers as inputs too
  if (inputs.size() != 1) {
    std::string names;
    for (const ValueInfo* v : inputs) names += (names.empty() ? "'" : ", '") + v->name + "'";
    fail("the graph has " + std::to_string(inputs.size()) + " inputs (" + names +
         "); snnc converts models with one image input");
  }
  const ValueInfo& in = *inputs[0];
  if (in.elem_type != kFloat)
    fail("input '" + in.name + "' is " + data_type_name(in.elem_type) + "; snnc converts models with a float32 image input");
  if (!in.has_shape || in.dims.empty()) fail("input '" + in.name + "' has no declared shape; export with a fixed input shape");
  OpValue v;
  v.name = in.name;
  for (size_t d = 0; d < in.dims.size(); ++d) {
    int64_t size = in.dims[d].value;
    if (size < 0 && d == 0) {
      size = 1;
      note("input '" + in.name + "' has a symbolic batch dimension ('" + in.dims[0].param + "'): batch 1 assumed");
    }
    if (size < 0)
      fail("input '" + in.name + "' has a symbolic dimension " + std::to_string(d) + " ('" + in.dims[d].param +
           "'); export with a fixed input size");
    v.shape.push_back(size);
  }
  if (fold::bounded_numel(v.shape) <= 0)
    fail("input '" + in.name + "' has shape " + snn::to_string(v.shape) + ": no elements or more than 2^40");
  graph_.batch = v.shape[0];
  if (ids_.count(in.name)) fail("input '" + in.name + "' is also an initializer");
  graph_.input = ids_[in.name] = graph_.add_value(v);
}

void Converter::declare_shapes() {
  auto declare = [&](const ValueInfo& v) {
    if (!v.is_tensor || !v.has_shape) return;
    snn::Shape s;
    for (size_t d = 0; d < v.dims.size(); ++d) {
      if (v.dims[d].value < 0 && d != 0) return;  // symbolic: not a static shape
      s.push_back(v.dims[d].value < 0 ? graph_.batch : v.dims[d].value);
    }
    if (fold::bounded_numel(s) >= 0) declared_[v.name] = s;  // absurd declarations are ignored
  };
  for (const ValueInfo& v : model_.graph.value_info) declare(v);
  for (const ValueInfo& v : model_.graph.outputs) declare(v);
}

void Converter::convert_node(const Node& n, const HandlerTable& table) {
  node_ = &n;
  for (const Attribute& a : n.attributes) {
    if (a.graphs)
      fail("has a subgraph (attribute '" + a.name + "'): snnc converts models without control flow; export "
           "with the condition or loop resolved (torch.onnx.export traces through Python control flow)");
    if (!a.ref_attr_name.empty()) fail("attribute '" + a.name + "' refers to a function attribute; not a model graph");
  }
  for (const std::string& in : n.inputs)
    if (!in.empty() && !ids_.count(in) && !pads_.count(in))
      fail("input '" + in + "' is not produced by any earlier node (the graph is damaged or not topologically sorted)");
  for (const std::string& out : n.outputs)
    if (!out.empty() && ids_.count(out)) fail("output '" + out + "' is produced twice");
  const bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
  auto it = default_domain ? table.find(n.op_type) : table.end();
  if (it != table.end()) it->second(*this, n);
  else unmapped(default_domain ? n.op_type : n.domain + "::" + n.op_type);
}

void Converter::set_scope(OpNode& op) const {
  const Scope s = node_scope(*node_);
  op.scope = s.path;
  op.scope_class = s.class_name;
}

void Converter::finish_output() {
  const auto& outs = model_.graph.outputs;
  if (outs.empty()) fail("the graph has no output");
  auto it = ids_.find(outs[0].name);
  if (it == ids_.end()) fail("output '" + outs[0].name + "' is not produced by any node");
  if (graph_.values[size_t(it->second)].is_constant) fail("output '" + outs[0].name + "' is a constant, not computed from the input");
  graph_.output = it->second;
  if (outs.size() > 1)
    note("the graph has " + std::to_string(outs.size()) + " outputs: the first ('" + outs[0].name + "') is the logits, the others are ignored");
}

void Converter::prune() {
  std::vector<bool> needed(graph_.values.size(), false);
  needed[size_t(graph_.output)] = true;
  std::vector<bool> keep(graph_.nodes.size(), false);
  for (size_t k = graph_.nodes.size(); k-- > 0;) {
    const OpNode& n = graph_.nodes[k];
    keep[k] = std::any_of(n.outputs.begin(), n.outputs.end(), [&](int o) { return needed[size_t(o)]; });
    if (keep[k])
      for (int i : n.inputs)
        if (i >= 0) needed[size_t(i)] = true;
  }
  std::vector<OpNode> kept;
  for (size_t k = 0; k < graph_.nodes.size(); ++k)
    if (keep[k]) kept.push_back(std::move(graph_.nodes[k]));
  if (kept.size() != graph_.nodes.size())
    note(std::to_string(graph_.nodes.size() - kept.size()) + " nodes that do not lead to the output were dropped");
  graph_.nodes = std::move(kept);
}

}  // namespace snn::conversion::onnx
