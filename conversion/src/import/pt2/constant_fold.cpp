// fold_constant (see constant_fold.hpp): shape ops, permutes, broadcasting arithmetic on constants.
#include "import/pt2/constant_fold.hpp"

#include <algorithm>
#include <cmath>

#include "import/pt2/common.hpp"

namespace snn::conversion::pt2 {

namespace {

using Attrs = std::map<std::string, OpAttr>;

std::vector<int64_t> contiguous_strides(const snn::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Elements of a shape, saturating instead of overflowing (the caller compares with kMaxFoldElements).
int64_t bounded_numel(const snn::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return kMaxElements;
    if (d != 0 && n > kMaxElements / d) return kMaxElements;
    n *= d;
  }
  return n;
}

// NumPy broadcasting of two shapes; false when they do not broadcast.
bool broadcast_shape(const snn::Shape& a, const snn::Shape& b, snn::Shape& out) {
  out.assign(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return true;
}

// c's values broadcast to `to` (c's shape must broadcast to it).
std::vector<float> broadcast_to(const OpConstant& c, const snn::Shape& to) {
  const int64_t n = numel_of(to);
  std::vector<float> out(static_cast<size_t>(n));
  const size_t pad = to.size() - c.shape.size();
  const std::vector<int64_t> src = contiguous_strides(c.shape), dst = contiguous_strides(to);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = pad; d < to.size(); ++d) {
      const int64_t idx = (i / dst[d]) % to[d];
      if (c.shape[d - pad] != 1) off += idx * src[d - pad];
    }
    out[size_t(i)] = c.values[size_t(off)];
  }
  return out;
}

std::optional<OpConstant> permute(const OpConstant& c, const std::vector<int64_t>& perm) {
  const size_t r = c.shape.size();
  if (perm.size() != r) return std::nullopt;
  snn::Shape out(r);
  std::vector<int64_t> seen(r, 0);
  for (size_t d = 0; d < r; ++d) {
    const int64_t p = perm[d] < 0 ? perm[d] + int64_t(r) : perm[d];
    if (p < 0 || p >= int64_t(r) || seen[size_t(p)]++) return std::nullopt;
    out[d] = c.shape[size_t(p)];
  }
  const std::vector<int64_t> src = contiguous_strides(c.shape), dst = contiguous_strides(out);
  OpConstant t;
  t.shape = out;
  t.values.resize(c.values.size());
  for (int64_t i = 0; i < int64_t(t.values.size()); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) {
      const int64_t p = perm[d] < 0 ? perm[d] + int64_t(r) : perm[d];
      off += ((i / dst[d]) % out[d]) * src[size_t(p)];
    }
    t.values[size_t(i)] = c.values[size_t(off)];
  }
  return t;
}

float apply(const std::string& op, float x, float y) {
  if (op == "add") return x + y;
  if (op == "sub") return x - y;
  if (op == "mul") return x * y;
  if (op == "div") return x / y;
  if (op == "maximum") return std::max(x, y);
  return std::min(x, y);  // minimum
}

std::optional<OpConstant> binary(const std::string& op, const OpConstant& a, const OpConstant& b) {
  snn::Shape out;
  if (!broadcast_shape(a.shape, b.shape, out) || bounded_numel(out) > kMaxFoldElements) return std::nullopt;
  const std::vector<float> x = broadcast_to(a, out), y = broadcast_to(b, out);
  OpConstant c;
  c.shape = out;
  c.values.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) c.values[i] = apply(op, x[i], y[i]);
  return c;
}

std::optional<OpConstant> unary(const std::string& op, OpConstant c) {
  for (float& v : c.values) v = op == "neg" ? -v : op == "floor" ? std::floor(v) : std::ceil(v);
  return c;
}

}  // namespace

std::optional<OpConstant> fold_constant(const std::string& op, const std::vector<const OpConstant*>& in,
                                        const Attrs& attrs, const snn::Shape& out_shape, bool out_known) {
  for (const OpConstant* c : in)
    if (!c || c->is_int || int64_t(c->values.size()) != c->numel()) return std::nullopt;
  if (in.size() == 1 && (op == "reshape" || op == "flatten" || op == "squeeze" || op == "unsqueeze")) {
    if (!out_known || bounded_numel(out_shape) != in[0]->numel()) return std::nullopt;
    OpConstant c = *in[0];
    c.shape = out_shape;
    return c;
  }
  if (in.size() == 1 && op == "permute") {
    auto it = attrs.find("perm");
    if (it == attrs.end() || !std::holds_alternative<std::vector<int64_t>>(it->second)) return std::nullopt;
    return permute(*in[0], std::get<std::vector<int64_t>>(it->second));
  }
  if (in.size() == 1 && op == "expand") {
    snn::Shape s;
    if (!out_known || bounded_numel(out_shape) > kMaxFoldElements || !broadcast_shape(in[0]->shape, out_shape, s) || s != out_shape)
      return std::nullopt;
    return OpConstant::of(out_shape, broadcast_to(*in[0], out_shape));
  }
  if (in.size() == 1 && (op == "neg" || op == "floor" || op == "ceil")) return unary(op, *in[0]);
  if (in.size() == 2 && (op == "add" || op == "sub" || op == "mul" || op == "div" || op == "maximum" || op == "minimum"))
    return binary(op, *in[0], *in[1]);
  return std::nullopt;
}

}  // namespace snn::conversion::pt2
