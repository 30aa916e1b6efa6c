// GraphBuilder and NodeContext: how one serialized node becomes canonical OpNodes (op_graph.hpp).
//
// GraphBuilder owns the name -> value table: every tensor of the program (placeholders, node outputs)
// is an OpValue named exactly as the FX node that produces it, shaped from tensor_values. NodeContext
// gives a node's mapping typed access to its arguments (by schema name, with the schema's defaults)
// and emits the canonical node, or folds it when every input is a constant.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/pt2/program.hpp"
#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion::pt2 {

class GraphBuilder {
 public:
  GraphBuilder(const Program& program, OpGraph& graph) : program(program), graph(graph) {}
  const Program& program;
  OpGraph& graph;

  int value(const std::string& name) const;  // fails when no earlier node or placeholder produced it
  bool has_value(const std::string& name) const { return ids_.count(name) > 0; }
  int add_tensor(const std::string& name);   // a new non-constant value, shaped from tensor_values
  int add_constant(const std::string& name, OpConstant c);
  void bind(const std::string& name, int id) { ids_[name] = id; }  // name now denotes value id
  void drop(const std::string& name, const std::string& why) { dropped_[name] = why; }
  const OpValue& at(int id) const { return graph.values[size_t(id)]; }
  bool is_constant(int id) const { return id >= 0 && at(id).is_constant; }
  const snn::Shape& shape(int id) const { return at(id).shape; }
  // A constant that is the 2-D transpose of another value (a folded permute/t of a weight).
  std::map<int, int> transpose_of;
  std::map<std::string, std::vector<std::string>> outputs_of;  // node name -> its outputs (getitem)
  std::set<std::string> skipped;                               // targets of nodes without tensor results

 private:
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::string, std::string> dropped_;
};

using Attrs = std::map<std::string, OpAttr>;

class NodeContext {
 public:
  NodeContext(GraphBuilder& b, const Node& n) : b(b), node(n) {}
  GraphBuilder& b;
  const Node& node;

  // Arguments, by schema name; a fallback is the schema's default (no fallback: the argument is required).
  bool given(const std::string& name) const;  // present and not None
  int tensor(const std::string& name) const;
  int opt_tensor(const std::string& name) const;  // -1 when absent or None
  std::vector<int> tensors(const std::string& name) const;
  int64_t i64(const std::string& name, std::optional<int64_t> fallback = std::nullopt) const;
  double f64(const std::string& name, std::optional<double> fallback = std::nullopt) const;
  std::optional<double> opt_number(const std::string& name) const;
  bool flag(const std::string& name, bool fallback) const;
  std::vector<int64_t> ints(const std::string& name, std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<int64_t> pair(const std::string& name, std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<double> floats(const std::string& name) const;  // [] when absent or None
  std::optional<std::string> str(const std::string& name) const;
  int64_t scalar_type(const std::string& name, int64_t fallback) const;
  int operand(const std::string& name) const;  // a tensor, or a number as a shape-[] constant
  int rank_of(int id) const;                   // fails when the shape is unknown

  // Emits op over inputs with the node's first output (the others are dropped with `why_dropped`);
  // folded to a constant when every input is one and the op folds.
  void emit(const std::string& op, std::vector<int> inputs, Attrs attrs = {}, const std::string& why_dropped = "");
  void emit_all(const std::string& op, std::vector<int> inputs, Attrs attrs);  // one value per output
  // An extra value inside one mapping (alpha * other): named "<node>.<suffix>".
  int emit_internal(const std::string& op, std::vector<int> inputs, Attrs attrs, const std::string& suffix);
  void identity(int input);  // a constant input is aliased; otherwise an identity node
  // The node under its own op name (or `op`, e.g. "aten.convolution.default (transposed)"), for the
  // lowering to refuse by name.
  void unmapped(const std::string& op = "");
  bool is_kind(const std::string& name, Arg::Kind kind) const;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const Arg* arg(const std::string& name) const;
  const Arg& required(const std::string& name) const;
  OpNode make(const std::string& op, std::vector<int> inputs, Attrs attrs) const;
  bool fold(const std::string& op, const std::vector<int>& inputs, const Attrs& attrs, const std::string& out_name);
};

}  // namespace snn::conversion::pt2
