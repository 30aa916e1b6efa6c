// parse_program: models/<name>.json -> Program (see program.hpp). Every field is read through JsonView,
// so a missing or mistyped field fails with its JSON path.
#include "import/pt2/program.hpp"

#include "import/pt2/common.hpp"

namespace snn::conversion::pt2 {

namespace {

using SymInts = std::map<std::string, int64_t>;

// A SymInt (sizes in TensorMeta, sym_int_values): {"as_int": n} or {"as_expr": {"expr_str", "hint"}}.
bool sym_int_hint(const JsonView& j, int64_t& out) {
  const auto [kind, v] = j.one_of();
  if (kind == "as_int") return out = v.i64(), true;
  if (kind != "as_expr") j.fail("unknown symbolic int kind '" + kind + "'");
  const auto hint = v.find("hint");
  if (!hint) return false;
  const auto [hk, hv] = hint->one_of();
  if (hk != "as_int") return false;
  out = hv.i64();
  return true;
}

std::vector<int64_t> sym_int_list(const JsonView& j, bool& known) {
  std::vector<int64_t> out;
  for (const JsonView& e : j.items()) {
    int64_t v = 0;
    known &= sym_int_hint(e, v);
    out.push_back(v);
  }
  if (out.size() > kMaxRank) j.fail("more than " + std::to_string(kMaxRank) + " dims");
  return out;
}

// A SymIntArgument in a node's arguments: {"as_int": n} or {"as_name": "s0"} (resolved to its hint).
int64_t sym_int_argument(const JsonView& j, const SymInts& syms) {
  const auto [kind, v] = j.one_of();
  if (kind == "as_int") return v.i64();
  if (kind != "as_name") j.fail("unknown symbolic int argument kind '" + kind + "'");
  auto it = syms.find(v.str());
  if (it == syms.end()) j.fail("symbolic int '" + v.str() + "' has no value the program was exported with");
  return it->second;
}

std::string tensor_name(const JsonView& j) { return j.at("name").str(); }

void parse_tensor_list(const JsonView& v, bool optional, Arg& a) {
  a.kind = Arg::Kind::Tensors;
  for (const JsonView& e : v.items()) {
    if (!optional) {
      a.tensors.push_back(tensor_name(e));
      continue;
    }
    const auto [k, t] = e.one_of();
    a.tensors.push_back(k == "as_tensor" ? tensor_name(t) : "");
  }
}

// Scalar members of the Argument union.
bool parse_scalar_arg(const std::string& kind, const JsonView& v, const SymInts& syms, Arg& a) {
  using K = Arg::Kind;
  if (kind == "as_none") a.kind = K::None;
  else if (kind == "as_int") a.kind = K::Int, a.i = v.i64();
  else if (kind == "as_sym_int") a.kind = K::Int, a.i = sym_int_argument(v, syms);
  else if (kind == "as_float") a.kind = K::Float, a.f = v.f64();
  else if (kind == "as_bool") a.kind = K::Bool, a.i = v.boolean() ? 1 : 0;
  else if (kind == "as_string") a.kind = K::String, a.s = v.str();
  else if (kind == "as_scalar_type") a.kind = K::ScalarType, a.i = v.i64();
  else if (kind == "as_tensor") a.kind = K::Tensor, a.tensor = tensor_name(v);
  else return false;
  return true;
}

Arg parse_arg(const JsonView& j, const SymInts& syms) {
  using K = Arg::Kind;
  Arg a;
  const auto [kind, v] = j.one_of();
  if (parse_scalar_arg(kind, v, syms, a)) return a;
  if (kind == "as_ints") {
    a.kind = K::Ints;
    for (const JsonView& e : v.items()) a.ints.push_back(e.i64());
  } else if (kind == "as_sym_ints") {
    a.kind = K::Ints;
    for (const JsonView& e : v.items()) a.ints.push_back(sym_int_argument(e, syms));
  } else if (kind == "as_floats") {
    a.kind = K::Floats;
    for (const JsonView& e : v.items()) a.floats.push_back(e.f64());
  } else if (kind == "as_bools") {
    a.kind = K::Bools;
    for (const JsonView& e : v.items()) a.ints.push_back(e.boolean() ? 1 : 0);
  } else if (kind == "as_tensors" || kind == "as_optional_tensors") {
    parse_tensor_list(v, kind == "as_optional_tensors", a);
  } else if (kind == "as_optional_tensor") {
    const auto [k, t] = v.one_of();
    if (k == "as_tensor") a.kind = K::Tensor, a.tensor = tensor_name(t);
  } else {
    a.kind = K::Other;  // memory format, layout, device, graphs, custom objects...: the mappings decide
    a.s = kind;
  }
  return a;
}

void parse_outputs(const JsonView& j, Node& n) {
  for (const JsonView& o : j.items()) {
    const auto [kind, v] = o.one_of();
    if (kind == "as_tensor") {
      n.outputs.push_back(tensor_name(v));
    } else if (kind == "as_tensors") {
      for (const JsonView& t : v.items()) n.outputs.push_back(tensor_name(t));
    } else if (kind == "as_optional_tensors") {
      for (const JsonView& t : v.items()) {
        const auto [k, tv] = t.one_of();
        n.outputs.push_back(k == "as_tensor" ? tensor_name(tv) : "");
      }
    } else if (kind == "as_none") {
      n.outputs.emplace_back();
    } else {
      ++n.non_tensor_outputs;
    }
  }
}

Node parse_node(const JsonView& j, size_t index, const SymInts& syms) {
  Node n;
  n.target = j.at("target").str();
  const std::string prefix = "torch.ops.";
  if (n.target.compare(0, prefix.size(), prefix) == 0) n.target = n.target.substr(prefix.size());
  for (const JsonView& in : j.at("inputs").items()) n.args.emplace_back(in.at("name").str(), parse_arg(in.at("arg"), syms));
  parse_outputs(j.at("outputs"), n);
  // "name" is optional in the schema (older files): the first output is what FX called the node then.
  if (const auto name = j.find("name")) n.name = name->str();
  if (n.name.empty()) n.name = !n.outputs.empty() && !n.outputs[0].empty() ? n.outputs[0] : "node" + std::to_string(index);
  if (const auto meta = j.find("metadata")) {
    if (const auto stack = meta->find("nn_module_stack")) std::tie(n.scope, n.scope_class) = innermost_module(stack->str());
  }
  return n;
}

void check_version(const JsonView& doc, Program& p) {
  const JsonView v = doc.at("schema_version");
  p.schema_major = v.at("major").i64();
  p.schema_minor = v.at("minor").i64();
  const std::string version = std::to_string(p.schema_major) + "." + std::to_string(p.schema_minor);
  if (p.schema_major > kSchemaMajor)
    fail("torch.export schema version " + version + " is newer than this snnc reads (" + std::to_string(kSchemaMajor) +
         ".x); export with torch <= 2.15 or use a newer snnc");
  if (p.schema_major < kSchemaMajor)
    fail("torch.export schema version " + version + " is older than this snnc reads (" + std::to_string(kSchemaMajor) +
         ".x); export and save the model again with torch 2.6 .. 2.15");
  if (const auto tv = doc.find("torch_version")) p.torch_version = tv->str();
  if (const auto ver = doc.find("verifiers")) {
    for (const JsonView& d : ver->items()) p.dialect += (p.dialect.empty() ? "" : ",") + d.str();
  } else if (const auto dialect = doc.find("dialect")) {
    p.dialect = dialect->str();
  }
}

InputSpec parse_input_spec(const JsonView& j, const SymInts& syms) {
  InputSpec s;
  const auto [kind, v] = j.one_of();
  s.kind = kind;
  if (kind == "user_input") {
    const Arg a = parse_arg(v.at("arg"), syms);
    s.name = a.kind == Arg::Kind::Tensor ? a.tensor : "";
    if (a.kind != Arg::Kind::Tensor) s.kind = "user_input (not a tensor)";
  } else if (kind == "parameter") {
    s.name = tensor_name(v.at("arg")), s.target = v.at("parameter_name").str();
  } else if (kind == "buffer") {
    s.name = tensor_name(v.at("arg")), s.target = v.at("buffer_name").str();
    if (const auto p = v.find("persistent")) s.persistent = p->boolean();
  } else if (kind == "tensor_constant") {
    s.name = tensor_name(v.at("arg")), s.target = v.at("tensor_constant_name").str();
  } else if (kind == "constant_input") {
    s.name = v.at("name").str();
    // ConstantValue has the same member names as Argument's scalars.
    s.constant = parse_arg(v.at("value"), syms);
  } else if (const auto arg = v.find("arg")) {
    if (arg->has("name")) s.name = arg->at("name").str();
  }
  return s;
}

OutputSpec parse_output_spec(const JsonView& j, const SymInts& syms) {
  OutputSpec s;
  const auto [kind, v] = j.one_of();
  s.kind = kind;
  const JsonView arg = v.at("arg");
  if (kind == "user_output") {
    const Arg a = parse_arg(arg, syms);
    if (a.kind == Arg::Kind::Tensor) s.name = a.tensor;
  } else if (arg.has("name")) {
    s.name = arg.at("name").str();
  }
  for (const char* key : {"buffer_name", "parameter_name", "user_input_name"})
    if (const auto t = v.find(key)) s.target = t->str();
  return s;
}

void parse_tensor_values(const JsonView& graph, Program& p) {
  for (const auto& [name, meta] : graph.at("tensor_values").members()) {
    const TensorMeta m = parse_tensor_meta(meta);
    TensorInfo& t = p.tensors[name];
    t.dtype = m.dtype;
    t.shape_known = m.known;
    if (m.known) t.shape = m.sizes;
  }
}

void parse_sym_ints(const JsonView& graph, Program& p) {
  const auto values = graph.find("sym_int_values");
  if (!values) return;
  for (const auto& [name, v] : values->members()) {
    int64_t hint = 0;
    if (sym_int_hint(v, hint)) p.sym_ints[name] = hint;
  }
}

}  // namespace

Program parse_program(const nlohmann::json& json, const std::string& where) {
  const JsonView doc(json, where);
  Program p;
  check_version(doc, p);
  if (const auto ranges = doc.find("range_constraints")) p.dynamic = !ranges->members().empty();
  const JsonView gm = doc.at("graph_module");
  const JsonView graph = gm.at("graph");
  parse_sym_ints(graph, p);
  parse_tensor_values(graph, p);
  const JsonView sig = gm.at("signature");
  for (const JsonView& s : sig.at("input_specs").items()) p.inputs.push_back(parse_input_spec(s, p.sym_ints));
  for (const JsonView& s : sig.at("output_specs").items()) p.outputs.push_back(parse_output_spec(s, p.sym_ints));
  const std::vector<JsonView> nodes = graph.at("nodes").items();
  if (nodes.size() > kMaxNodes)
    graph.fail("the graph has " + std::to_string(nodes.size()) + " nodes, more than the " + std::to_string(kMaxNodes) + " snnc reads");
  for (size_t i = 0; i < nodes.size(); ++i) p.nodes.push_back(parse_node(nodes[i], i, p.sym_ints));
  return p;
}

int64_t checked_numel(const std::vector<int64_t>& sizes, const std::string& what) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) fail(what + " has a negative size");
    // Each size too, so that a zero elsewhere cannot hide an absurd one from later arithmetic.
    if (s > kMaxElements || (s != 0 && n > kMaxElements / s)) fail(what + " has more than 2^40 elements");
    n *= s;
  }
  return n;
}

TensorMeta parse_tensor_meta(const JsonView& j) {
  TensorMeta m;
  m.dtype = j.at("dtype").i64();
  m.sizes = sym_int_list(j.at("sizes"), m.known);
  if (const auto strides = j.find("strides")) m.strides = sym_int_list(*strides, m.known);
  if (const auto offset = j.find("storage_offset")) m.known &= sym_int_hint(*offset, m.storage_offset);
  if (const auto layout = j.find("layout")) m.layout = layout->i64();
  if (m.known) checked_numel(m.sizes, j.where());
  return m;
}

std::pair<std::string, std::string> innermost_module(const std::string& stack) {
  // Entries "key,path,type" joined by ';' (outermost first); commas inside brackets belong to the key.
  const size_t start = stack.rfind(';') == std::string::npos ? 0 : stack.rfind(';') + 1;
  const std::string entry = stack.substr(start);
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : entry) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) parts.emplace_back();
    else parts.back() += c;
  }
  if (parts.size() != 3 || parts[1].empty()) return {"", ""};  // the root module (or an unreadable entry)
  const std::string& type = parts[2];
  const size_t dot = type.rfind('.');
  return {parts[1], dot == std::string::npos ? type : type.substr(dot + 1)};
}

}  // namespace snn::conversion::pt2

namespace snn::conversion::pt2 {

const Arg* Node::arg(const std::string& name) const {
  for (const auto& [n, a] : args)
    if (n == name) return &a;
  return nullptr;
}

}  // namespace snn::conversion::pt2
