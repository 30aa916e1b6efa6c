// NodeContext's emitters (see graph_builder.hpp): canonical nodes, folded constants, unmapped nodes.
#include "import/pt2/common.hpp"
#include "import/pt2/constant_fold.hpp"
#include "import/pt2/graph_builder.hpp"

namespace snn::conversion::pt2 {

OpNode NodeContext::make(const std::string& op, std::vector<int> inputs, Attrs attrs) const {
  OpNode n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.name = node.name;
  n.source_op = node.target;
  n.scope = node.scope;
  n.scope_class = node.scope_class;
  return n;
}

// Folds op when every input is a constant and fold_constant knows it; registers the result as out_name.
bool NodeContext::fold(const std::string& op, const std::vector<int>& inputs, const Attrs& attrs, const std::string& out_name) {
  std::vector<const OpConstant*> in;
  for (int id : inputs) {
    if (!b.is_constant(id)) return false;
    in.push_back(&b.at(id).constant);
  }
  if (in.empty()) return false;
  snn::Shape shape;
  bool known = false;
  auto it = b.program.tensors.find(out_name);
  if (it != b.program.tensors.end() && it->second.shape_known) shape = it->second.shape, known = true;
  std::optional<OpConstant> c = fold_constant(op, in, attrs, shape, known);
  if (!c) return false;
  const bool is_transpose = op == "permute" && c->shape.size() == 2 && in[0]->shape.size() == 2 &&
                            std::get<std::vector<int64_t>>(attrs.at("perm")) != std::vector<int64_t>{0, 1};
  const int id = b.add_constant(out_name, std::move(*c));
  if (is_transpose) b.transpose_of[id] = inputs[0];
  return true;
}

void NodeContext::emit(const std::string& op, std::vector<int> inputs, Attrs attrs, const std::string& why_dropped) {
  if (node.outputs.empty() || node.outputs[0].empty()) fail("has no tensor result");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty())
      b.drop(node.outputs[i], why_dropped.empty() ? "result " + std::to_string(i) + " of node '" + node.name + "'" : why_dropped);
  if (fold(op, inputs, attrs, node.outputs[0])) return;
  OpNode n = make(op, std::move(inputs), std::move(attrs));
  n.outputs = {b.add_tensor(node.outputs[0])};
  b.graph.nodes.push_back(std::move(n));
}

void NodeContext::emit_all(const std::string& op, std::vector<int> inputs, Attrs attrs) {
  OpNode n = make(op, std::move(inputs), std::move(attrs));
  for (const std::string& out : node.outputs)
    if (!out.empty()) n.outputs.push_back(b.add_tensor(out));
  if (n.outputs.empty()) fail("has no tensor result");
  b.graph.nodes.push_back(std::move(n));
}

int NodeContext::emit_internal(const std::string& op, std::vector<int> inputs, Attrs attrs, const std::string& suffix) {
  const std::string name = node.name + "." + suffix;
  if (fold(op, inputs, attrs, name)) return b.value(name);
  OpNode n = make(op, std::move(inputs), std::move(attrs));
  n.name = name;  // not an FX node: named apart from the node it helps
  OpValue v;
  v.name = name;
  v.shape = b.shape(n.inputs[0]);  // elementwise with a scalar: the tensor's shape
  const int id = b.graph.add_value(std::move(v));
  b.bind(name, id);
  n.outputs = {id};
  b.graph.nodes.push_back(std::move(n));
  return id;
}

bool NodeContext::is_kind(const std::string& name, Arg::Kind kind) const {
  const Arg* a = arg(name);
  return a && a->kind == kind;
}

void NodeContext::identity(int input) {
  if (b.is_constant(input)) {
    if (node.outputs.empty() || node.outputs[0].empty()) fail("has no tensor result");
    b.bind(node.outputs[0], input);  // an alias of a weight: no node, no copy
    return;
  }
  emit("identity", {input});
}

void NodeContext::unmapped(const std::string& op) {
  std::vector<int> inputs;
  for (const auto& [name, a] : node.args) {
    if (a.kind == Arg::Kind::Tensor) inputs.push_back(b.value(a.tensor));
    if (a.kind == Arg::Kind::Tensors)
      for (const std::string& t : a.tensors) inputs.push_back(t.empty() ? -1 : b.value(t));
  }
  emit_all(op.empty() ? node.target : op, std::move(inputs), {});
}

}  // namespace snn::conversion::pt2
