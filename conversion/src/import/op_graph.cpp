// OpGraph helpers: constants, attribute readers, node descriptions (see op_graph.hpp).
#include "snn/conversion/import/op_graph.hpp"

#include <cmath>

#include "snn/error.hpp"

namespace snn::conversion {

snn::Tensor OpConstant::tensor() const {
  const int64_t n = numel();
  require(n >= 0 && n <= (int64_t(1) << 32), "constant of shape " + snn::to_string(shape) + " is too large");
  if (!is_int) {
    require(int64_t(values.size()) == n, "constant of shape " + snn::to_string(shape) + " holds " +
                                             std::to_string(values.size()) + " values");
    return snn::Tensor(shape, values);
  }
  require(int64_t(ints.size()) == n, "int constant of shape " + snn::to_string(shape) + " holds " +
                                         std::to_string(ints.size()) + " values");
  std::vector<float> f(ints.begin(), ints.end());
  return snn::Tensor(shape, std::move(f));
}

OpConstant OpConstant::scalar(double v) {
  OpConstant c;
  c.values = {float(v)};
  return c;
}

OpConstant OpConstant::of(snn::Shape shape, std::vector<float> values) {
  OpConstant c;
  c.shape = std::move(shape);
  c.values = std::move(values);
  require(int64_t(c.values.size()) == c.numel(), "constant of shape " + snn::to_string(c.shape) + " given " +
                                                     std::to_string(c.values.size()) + " values");
  return c;
}

int64_t OpNode::get_int(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (auto* d = std::get_if<double>(&it->second)) {
    if (std::floor(*d) == *d) return int64_t(*d);
  }
  throw snn::Error("attribute '" + key + "' of " + name + " is not an integer");
}

double OpNode::get_float(const std::string& key, double fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  if (auto* v = std::get_if<int64_t>(&it->second)) return double(*v);
  throw snn::Error("attribute '" + key + "' of " + name + " is not a number");
}

std::vector<int64_t> OpNode::get_ints(const std::string& key, std::vector<int64_t> fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* i = std::get_if<int64_t>(&it->second)) return {*i};
  throw snn::Error("attribute '" + key + "' of " + name + " is not a list of integers");
}

std::vector<double> OpNode::get_floats(const std::string& key, std::vector<double> fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::vector<double>>(&it->second)) return *v;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return std::vector<double>(v->begin(), v->end());
  if (auto* d = std::get_if<double>(&it->second)) return {*d};
  throw snn::Error("attribute '" + key + "' of " + name + " is not a list of numbers");
}

int OpGraph::add_value(OpValue v) {
  values.push_back(std::move(v));
  return int(values.size()) - 1;
}

int OpGraph::add_constant(std::string name, OpConstant c) {
  OpValue v;
  v.name = std::move(name);
  v.is_constant = true;
  v.shape = c.shape;
  v.constant = std::move(c);
  return add_value(std::move(v));
}

std::string OpGraph::describe(const OpNode& n) const {
  std::string s = "node '" + n.name + "' (" + n.source_op;
  if (!n.scope.empty()) s += ", module '" + n.scope + "'" + (n.scope_class.empty() ? "" : " (" + n.scope_class + ")");
  return s + ")";
}

OpConstant transpose2d(const OpConstant& c) {
  require(c.shape.size() == 2 && !c.is_int, "transpose of a constant that is not a 2-D float matrix");
  const int64_t r = c.shape[0], k = c.shape[1];
  OpConstant t;
  t.shape = {k, r};
  t.values.resize(c.values.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < k; ++j) t.values[size_t(j * r + i)] = c.values[size_t(i * k + j)];
  return t;
}

}  // namespace snn::conversion
