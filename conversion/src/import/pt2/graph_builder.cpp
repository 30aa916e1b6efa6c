// GraphBuilder and NodeContext (see graph_builder.hpp).
#include "import/pt2/graph_builder.hpp"

#include <cmath>

#include "import/pt2/common.hpp"
#include "import/pt2/constant_fold.hpp"

namespace snn::conversion::pt2 {

int GraphBuilder::value(const std::string& name) const {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  auto d = dropped_.find(name);
  if (d != dropped_.end()) fail("uses '" + name + "', " + d->second + ", which snnc does not compute");
  fail("uses '" + name + "', which no earlier node or input produces");
}

int GraphBuilder::add_tensor(const std::string& name) {
  OpValue v;
  v.name = name;
  auto it = program.tensors.find(name);
  if (it != program.tensors.end() && it->second.shape_known) v.shape = it->second.shape;
  const int id = graph.add_value(std::move(v));
  ids_[name] = id;
  return id;
}

int GraphBuilder::add_constant(const std::string& name, OpConstant c) {
  const int id = graph.add_constant(name, std::move(c));
  ids_[name] = id;
  return id;
}

// ---- arguments ----

const Arg* NodeContext::arg(const std::string& name) const { return node.arg(name); }

const Arg& NodeContext::required(const std::string& name) const {
  const Arg* a = arg(name);
  if (!a || a->kind == Arg::Kind::None) fail("argument '" + name + "' is missing");
  return *a;
}

bool NodeContext::given(const std::string& name) const {
  const Arg* a = arg(name);
  return a && a->kind != Arg::Kind::None;
}

int NodeContext::tensor(const std::string& name) const {
  const Arg& a = required(name);
  if (a.kind != Arg::Kind::Tensor) fail("argument '" + name + "' is not a tensor");
  return b.value(a.tensor);
}

int NodeContext::opt_tensor(const std::string& name) const { return given(name) ? tensor(name) : -1; }

std::vector<int> NodeContext::tensors(const std::string& name) const {
  const Arg& a = required(name);
  if (a.kind != Arg::Kind::Tensors) fail("argument '" + name + "' is not a list of tensors");
  std::vector<int> ids;
  for (const std::string& t : a.tensors) ids.push_back(t.empty() ? -1 : b.value(t));
  return ids;
}

int64_t NodeContext::i64(const std::string& name, std::optional<int64_t> fallback) const {
  if (!given(name) && fallback) return *fallback;
  const Arg& a = required(name);
  if (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Bool) return a.i;
  if (a.kind == Arg::Kind::Float && std::floor(a.f) == a.f && std::fabs(a.f) < 9e15) return int64_t(a.f);
  fail("argument '" + name + "' is not an integer");
}

double NodeContext::f64(const std::string& name, std::optional<double> fallback) const {
  if (!given(name) && fallback) return *fallback;
  const Arg& a = required(name);
  if (a.kind == Arg::Kind::Float) return a.f;
  if (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Bool) return double(a.i);
  fail("argument '" + name + "' is not a number");
}

std::optional<double> NodeContext::opt_number(const std::string& name) const {
  if (!given(name)) return std::nullopt;
  return f64(name);
}

bool NodeContext::flag(const std::string& name, bool fallback) const { return i64(name, fallback ? 1 : 0) != 0; }

std::vector<int64_t> NodeContext::ints(const std::string& name, std::optional<std::vector<int64_t>> fallback) const {
  if (!given(name) && fallback) return *fallback;
  const Arg& a = required(name);
  if (a.kind == Arg::Kind::Ints || a.kind == Arg::Kind::Bools) return a.ints;
  if (a.kind == Arg::Kind::Int) return {a.i};
  fail("argument '" + name + "' is not a list of integers");
}

std::vector<int64_t> NodeContext::pair(const std::string& name, std::optional<std::vector<int64_t>> fallback) const {
  std::vector<int64_t> v = ints(name, std::move(fallback));
  if (v.size() == 1) v.push_back(v[0]);  // int[2] accepts one value for both dims
  if (v.size() != 2) fail("argument '" + name + "' has " + std::to_string(v.size()) + " values, expected 2");
  return v;
}

std::vector<double> NodeContext::floats(const std::string& name) const {
  if (!given(name)) return {};
  const Arg& a = required(name);
  if (a.kind == Arg::Kind::Floats) return a.floats;
  if (a.kind == Arg::Kind::Ints) return std::vector<double>(a.ints.begin(), a.ints.end());
  fail("argument '" + name + "' is not a list of numbers");
}

std::optional<std::string> NodeContext::str(const std::string& name) const {
  if (!given(name)) return std::nullopt;
  const Arg& a = required(name);
  if (a.kind != Arg::Kind::String) fail("argument '" + name + "' is not a string");
  return a.s;
}

int64_t NodeContext::scalar_type(const std::string& name, int64_t fallback) const {
  if (!given(name)) return fallback;
  const Arg& a = required(name);
  if (a.kind != Arg::Kind::ScalarType) fail("argument '" + name + "' is not a dtype");
  return a.i;
}

int NodeContext::operand(const std::string& name) const {
  const Arg& a = required(name);
  if (a.kind == Arg::Kind::Tensor) return b.value(a.tensor);
  return b.add_constant(node.name + "." + name, OpConstant::scalar(f64(name)));
}

int NodeContext::rank_of(int id) const {
  const OpValue& v = b.at(id);
  if (v.shape.empty() && !v.is_constant && !(b.program.tensors.count(v.name) && b.program.tensors.at(v.name).shape_known))
    fail("the shape of '" + v.name + "' is not recorded in the program");
  return int(v.shape.size());
}

void NodeContext::fail(const std::string& what) const { pt2::fail(what); }

}  // namespace snn::conversion::pt2
