// ATen -> canonical: elementwise arithmetic (scalars become shape-[] constants, alpha is folded in),
// identities (dropout in eval, detach, clone, float32 casts), shapes, cat/split/slice, nearest upsampling.
#include <algorithm>
#include <limits>

#include "import/pt2/aten_ops.hpp"
#include "import/pt2/common.hpp"
#include "import/pt2/constant_fold.hpp"

namespace snn::conversion::pt2 {

namespace {

using Ints = std::vector<int64_t>;
constexpr int64_t kFloat32 = 7;  // schema ScalarType.FLOAT

// other · alpha (add/sub's alpha), as a constant when other is one.
int scaled(NodeContext& c, int other, double alpha) {
  if (alpha == 1.0) return other;
  const int a = c.b.add_constant(c.node.name + ".alpha", OpConstant::scalar(alpha));
  return c.emit_internal("mul", {other, a}, {}, "alpha_other");
}

void add(NodeContext& c) { c.emit("add", {c.operand("self"), scaled(c, c.operand("other"), c.f64("alpha", 1.0))}); }
void sub(NodeContext& c) { c.emit("sub", {c.operand("self"), scaled(c, c.operand("other"), c.f64("alpha", 1.0))}); }
void rsub(NodeContext& c) { c.emit("sub", {c.operand("other"), scaled(c, c.operand("self"), c.f64("alpha", 1.0))}); }
void mul(NodeContext& c) { c.emit("mul", {c.operand("self"), c.operand("other")}); }
void maximum(NodeContext& c) { c.emit("maximum", {c.operand("self"), c.operand("other")}); }
void minimum(NodeContext& c) { c.emit("minimum", {c.operand("self"), c.operand("other")}); }

// div with rounding_mode "floor"/"trunc" is not a plain division: left unmapped.
void div(NodeContext& c) {
  if (c.given("rounding_mode")) return c.unmapped();
  c.emit("div", {c.operand("self"), c.operand("other")});
}

void floor_op(NodeContext& c) { c.emit("floor", {c.tensor("self")}); }
void ceil_op(NodeContext& c) { c.emit("ceil", {c.tensor("self")}); }
void neg(NodeContext& c) { c.emit("neg", {c.tensor("self")}); }
void round_op(NodeContext& c) {
  if (c.i64("decimals", 0) != 0) return c.unmapped();
  c.emit("round", {c.tensor("self")});
}

// The first tensor argument (self / input, whatever the overload calls it).
int first_tensor(NodeContext& c) {
  for (const auto& [name, a] : c.node.args)
    if (a.kind == Arg::Kind::Tensor) return c.b.value(a.tensor);
  c.fail("has no tensor argument");
}

void identity(NodeContext& c) { c.identity(first_tensor(c)); }

// dropout(input, p, train): an identity in inference; random in training mode, so refused.
void dropout(NodeContext& c) {
  if (c.flag("train", false)) c.fail("runs dropout in training mode; call model.eval() before torch.export.export");
  if (c.node.outputs.size() > 1) return c.emit("identity", {first_tensor(c)}, {}, "the dropout mask");  // native_dropout
  c.identity(first_tensor(c));
}

// Casts: identities when they keep float32; any other dtype is left unmapped.
void cast(NodeContext& c) {
  if (c.scalar_type("dtype", kFloat32) != kFloat32) return c.unmapped();
  c.identity(first_tensor(c));
}

void flatten(NodeContext& c) {
  c.emit("flatten", {c.tensor("self")}, {{"start_dim", c.i64("start_dim", 0)}, {"end_dim", c.i64("end_dim", -1)}});
}

void reshape_to(NodeContext& c, const char* arg) { c.emit("reshape", {c.tensor("self")}, {{"shape", c.ints(arg)}}); }
void view(NodeContext& c) { reshape_to(c, "size"); }
void reshape(NodeContext& c) { reshape_to(c, "shape"); }

// The output's recorded shape; nullptr when the program does not record it.
const snn::Shape* output_shape(NodeContext& c) {
  if (c.node.outputs.empty()) return nullptr;
  auto it = c.b.program.tensors.find(c.node.outputs[0]);
  return it != c.b.program.tensors.end() && it->second.shape_known ? &it->second.shape : nullptr;
}

void view_as(NodeContext& c) {
  const snn::Shape* out = output_shape(c);
  if (!out) return c.unmapped();
  c.emit("reshape", {c.tensor("self")}, {{"shape", Ints(out->begin(), out->end())}});
}

// expand: folded for a constant, an identity when it keeps the shape; a real broadcast stays unmapped.
void expand(NodeContext& c) {
  const int x = c.tensor("self");
  const snn::Shape* out = output_shape(c);
  if (!out) return c.unmapped();
  if (*out == c.b.shape(x)) return c.identity(x);
  if (c.b.is_constant(x)) {
    if (auto folded = fold_constant("expand", {&c.b.at(x).constant}, {}, *out, true)) {
      c.b.add_constant(c.node.outputs[0], std::move(*folded));
      return;
    }
  }
  c.unmapped();
}

// squeeze: the dims of size 1 among those asked for (all but the batch for squeeze.default).
void squeeze(NodeContext& c) {
  const int x = c.tensor("self");
  const snn::Shape& s = c.b.shape(x);
  Ints asked = c.ints("dim", Ints{}), dims;
  if (!c.given("dim"))
    for (int64_t d = 1; d < int64_t(s.size()); ++d) asked.push_back(d);
  for (int64_t d : asked) {
    const int64_t n = d < 0 ? d + int64_t(s.size()) : d;
    if (s.empty() || (n >= 0 && n < int64_t(s.size()) && s[size_t(n)] == 1)) dims.push_back(d);
  }
  c.emit("squeeze", {x}, {{"dims", dims}});
}

void unsqueeze(NodeContext& c) { c.emit("unsqueeze", {c.tensor("self")}, {{"dims", Ints{c.i64("dim")}}}); }
void permute(NodeContext& c) { c.emit("permute", {c.tensor("self")}, {{"perm", c.ints("dims")}}); }

void transpose(NodeContext& c) {
  const int x = c.tensor("self");
  const int64_t r = c.rank_of(x);
  int64_t a = c.i64("dim0"), b = c.i64("dim1");
  a = a < 0 ? a + r : a, b = b < 0 ? b + r : b;
  if (a < 0 || b < 0 || a >= r || b >= r) c.fail("transposes dims outside a rank-" + std::to_string(r) + " tensor");
  Ints perm(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) perm[size_t(d)] = d;
  std::swap(perm[size_t(a)], perm[size_t(b)]);
  c.emit("permute", {x}, {{"perm", perm}});
}

// t(): a 2-D transpose; 0-D and 1-D tensors are returned as they are.
void t_op(NodeContext& c) {
  const int x = c.tensor("self");
  if (c.rank_of(x) < 2) return c.identity(x);
  c.emit("permute", {x}, {{"perm", Ints{1, 0}}});
}

}  // namespace

void add_shape_ops(MapperTable& t);  // aten_shape_ops.cpp

void add_tensor_ops(MapperTable& t) {
  for (const char* k : {"aten.add.Tensor", "aten.add.Scalar", "aten.add_.Tensor", "aten.add_.Scalar"}) t[k] = add;
  for (const char* k : {"aten.sub.Tensor", "aten.sub.Scalar", "aten.sub_.Tensor", "aten.sub_.Scalar"}) t[k] = sub;
  for (const char* k : {"aten.rsub.Tensor", "aten.rsub.Scalar"}) t[k] = rsub;
  for (const char* k : {"aten.mul.Tensor", "aten.mul.Scalar", "aten.mul_.Tensor", "aten.mul_.Scalar"}) t[k] = mul;
  for (const char* k : {"aten.div.Tensor", "aten.div.Scalar", "aten.div_.Tensor", "aten.div_.Scalar", "aten.div.Tensor_mode",
                        "aten.div.Scalar_mode"})
    t[k] = div;
  t["aten.maximum.default"] = maximum;
  t["aten.minimum.default"] = minimum;
  for (const char* k : {"aten.floor.default", "aten.floor_.default"}) t[k] = floor_op;
  t["aten.ceil.default"] = ceil_op;
  t["aten.neg.default"] = neg;
  for (const char* k : {"aten.round.default", "aten.round.decimals"}) t[k] = round_op;
  for (const char* k : {"aten.detach.default", "aten.detach_.default", "aten.clone.default", "aten.contiguous.default",
                        "aten.alias.default", "aten.lift_fresh_copy.default", "aten.type_as.default"})
    t[k] = identity;
  for (const char* k : {"aten.dropout.default", "aten.dropout_.default", "aten.feature_dropout.default",
                        "aten.alpha_dropout.default", "aten.native_dropout.default"})
    t[k] = dropout;
  for (const char* k : {"aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout", "aten.to.device"}) t[k] = cast;
  t["aten.flatten.using_ints"] = flatten;
  for (const char* k : {"aten.view.default", "aten._unsafe_view.default", "aten.view_copy.default"}) t[k] = view;
  t["aten.reshape.default"] = reshape;
  for (const char* k : {"aten.view_as.default", "aten.reshape_as.default"}) t[k] = view_as;
  t["aten.expand.default"] = expand;
  for (const char* k : {"aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims"}) t[k] = squeeze;
  t["aten.unsqueeze.default"] = unsqueeze;
  t["aten.permute.default"] = permute;
  t["aten.transpose.int"] = transpose;
  t["aten.t.default"] = t_op;
  add_shape_ops(t);
}

}  // namespace snn::conversion::pt2
