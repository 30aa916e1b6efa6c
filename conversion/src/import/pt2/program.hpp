// Program: the parts of a serialized ExportedProgram (models/<name>.json, torch/_export/serde/schema.py)
// that snnc uses, parsed and type-checked once. Schema versions accepted: major 8 (torch 2.6 .. 2.15
// write 8.x; any minor: later minors only add fields, which are ignored).
//
// In the serialized graph, getitem nodes are folded into their producer: a node with several results
// lists them as outputs (named as the getitem nodes that FX had, "<node>_unused_<i>" for unused ones).
// Symbolic integers are resolved to their hints (the sizes the program was exported with).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "import/pt2/json_view.hpp"
#include "snn/tensor.hpp"

namespace snn::conversion::pt2 {

constexpr int64_t kSchemaMajor = 8;

// One serialized Argument, reduced to what the op mappings need.
struct Arg {
  enum class Kind { None, Tensor, Tensors, Int, Ints, Float, Floats, Bool, Bools, String, ScalarType, Other };
  Kind kind = Kind::None;
  std::string tensor;                 // Tensor
  std::vector<std::string> tensors;   // Tensors (optional tensor lists: "" for None)
  int64_t i = 0;                      // Int, Bool (0/1), ScalarType
  double f = 0;                       // Float
  std::vector<int64_t> ints;          // Ints, Bools
  std::vector<double> floats;         // Floats
  std::string s;                      // String; for Other, the union member's name ("as_graph")
};

struct Node {
  std::string name;     // the FX node name
  std::string target;   // "aten.conv2d.default" ("torch.ops." removed), "_operator.getitem"
  std::vector<std::pair<std::string, Arg>> args;  // by schema name, in order
  std::vector<std::string> outputs;               // tensor outputs in order ("" where an output is None)
  size_t non_tensor_outputs = 0;                  // symbolic ints/bools the node returns
  std::string scope, scope_class;                 // innermost nn_module_stack entry: "features.5", "QCFS"
  const Arg* arg(const std::string& name) const;  // nullptr when not given
};

struct TensorInfo {
  snn::Shape shape;      // empty when a size is symbolic without a hint
  bool shape_known = false;
  int64_t dtype = 0;     // schema ScalarType (7: float32)
};

struct InputSpec {
  std::string kind;      // "user_input", "parameter", "buffer", "tensor_constant", "constant_input", ...
  std::string name;      // the placeholder (FX node) name
  std::string target;    // the state-dict / constants key
  bool persistent = true;
  Arg constant;          // constant_input's value
};

struct OutputSpec {
  std::string kind;      // "user_output", "buffer_mutation", ...
  std::string name;      // the tensor name ("" when not a tensor)
  std::string target;    // the mutated buffer or parameter, where one is named
};

struct Program {
  int64_t schema_major = 0, schema_minor = 0;
  std::string torch_version;  // "" when not recorded
  std::string dialect;        // "TRAINING", "ATEN", ...
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<Node> nodes;
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, int64_t> sym_ints;  // symbolic int name -> hint
  bool dynamic = false;                     // exported with dynamic sizes (range constraints)
};

// Throws pt2::Failure naming `where` (the archive entry) and the JSON path at fault.
Program parse_program(const nlohmann::json& doc, const std::string& where);

// "L__self__,,torch.nn.modules.container.Sequential;L__self__0,0,torch.nn.modules.conv.Conv2d" ->
// {"0", "Conv2d"}: the innermost module's path and class short name ({"", ""} for the root).
std::pair<std::string, std::string> innermost_module(const std::string& nn_module_stack);

// A serialized TensorMeta, sizes resolved to hints; `known` is false when a size has none.
struct TensorMeta {
  int64_t dtype = 0, layout = 0, storage_offset = 0;
  std::vector<int64_t> sizes, strides;
  bool known = true;
};
TensorMeta parse_tensor_meta(const JsonView& j);

// Elements of a shape; fails naming `what` when a size is negative or the count exceeds kMaxElements.
int64_t checked_numel(const std::vector<int64_t>& sizes, const std::string& what);

}  // namespace snn::conversion::pt2
