// ONNX's layer ops: Relu, Clip, BatchNormalization, Gemm, MatMul, Resize/Upsample (nearest only, where
// the rounding equals PyTorch's `nearest` or `nearest-exact`), and Pad (zeros, folded into the Conv or
// AveragePool it feeds).
#include <cmath>

#include "import/onnx/const_fold.hpp"
#include "import/onnx/onnx_convert.hpp"
#include "snn/error.hpp"

namespace snn::conversion::onnx {

namespace {

void op_relu(Converter& c, const Node&) {
  if (c.is_const(c.input(0))) return c.bind_constant(0, folded(c, [&] { return fold::unary("Relu", c.constant(0)); }));
  c.emit("relu", {c.input(0)}, {known_shape(c, 0)});
}

// A Clip bound: the attribute (opset < 11) or a constant scalar input; absent (or +-FLT_MAX) is unbounded.
bool clip_bound(Converter& c, const char* attr, size_t input, double& v) {
  if (c.opset() < 11) {
    v = c.attr_float(attr, std::string(attr) == "min" ? -3.4e38 : 3.4e38);
    return std::fabs(v) < 3.4e38;
  }
  if (!c.has_input(input)) return false;
  const OpConstant& k = c.constant(input);
  if (k.numel() != 1) c.fail(std::string("its ") + attr + " must be a scalar");
  v = k.is_int ? double(k.ints[0]) : double(k.values[0]);
  return true;
}

void op_clip(Converter& c, const Node& n) {
  for (size_t i = 1; i < 3 && c.opset() >= 11; ++i)
    if (c.has_input(i) && !c.is_const(c.input(i))) return c.unmapped("Clip(dynamic bounds)", "its bounds are computed");
  double lo = 0, hi = 0;
  const bool has_lo = clip_bound(c, "min", 1, lo), has_hi = clip_bound(c, "max", 2, hi);
  if (c.is_const(c.input(0))) {
    OpConstant v = c.constant(0);
    if (has_lo) v = folded(c, [&] { return fold::binary("Max", v, OpConstant::scalar(lo)); });
    if (has_hi) v = folded(c, [&] { return fold::binary("Min", v, OpConstant::scalar(hi)); });
    return c.bind_constant(0, v);
  }
  (void)n;
  OpNode& node = c.emit("clamp", {c.input(0)}, {known_shape(c, 0)});
  if (has_lo) node.attrs["min"] = lo;
  if (has_hi) node.attrs["max"] = hi;
}

void op_batch_norm(Converter& c, const Node& n) {
  if (c.attr_int("training_mode", 0) != 0 || c.output_used(1) || c.output_used(2))
    return c.unmapped("BatchNormalization(training)", "batch statistics are computed in training mode");
  if (n.inputs.size() != 5) c.fail("expects 5 inputs (X, scale, B, mean, var)");
  OpNode& node = c.emit("batch_norm", {c.input(0), c.input(1), c.input(2), c.input(3), c.input(4)}, {known_shape(c, 0)});
  node.attrs["eps"] = c.attr_float("epsilon", 1e-5);
}

OpConstant scaled(OpConstant k, double s) {
  for (float& v : k.values) v = float(v * s);
  return k;
}

// Gemm's C as a bias of `out` features: beta * C when it broadcasts along rows; false otherwise.
bool gemm_bias(Converter& c, int64_t out, double beta, OpConstant& bias) {
  const OpConstant& k = c.constant(2);
  if (k.is_int || out == 0 || k.numel() == 0 || (k.numel() != out && k.numel() != 1) || (k.shape.size() == 2 && k.shape[0] != 1)) return false;
  bias = OpConstant::of({out}, std::vector<float>(size_t(out), k.values[0]));
  if (k.numel() == out) bias.values = k.values;
  bias = scaled(bias, beta);
  return true;
}

void op_gemm(Converter& c, const Node& n) {
  if (c.attr_int("transA", 0)) return c.unmapped("Gemm(transA=1)", "a transposed activation");
  if (!c.is_const(c.input(1)) || c.constant(1).shape.size() != 2 || c.constant(1).is_int)
    return c.unmapped("Gemm(non-constant B)", "B must be a constant float matrix");
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  const bool transposed = c.attr_int("transB", 0) != 0;
  OpConstant w = transposed ? c.constant(1) : folded(c, [&] { return transpose2d(c.constant(1)); });
  const int64_t out = w.shape[0], in_features = w.shape[1];
  const bool derived = !transposed || alpha != 1.0;
  const int wid = derived ? c.new_constant("weight", scaled(std::move(w), alpha)) : c.input(1);
  const snn::Shape a = known_shape(c, 0);
  if (!a.empty() && (a.size() != 2 || a[1] != in_features))
    c.fail("input of shape " + snn::to_string(a) + " does not fit B of shape " + snn::to_string(c.constant(1).shape));
  const snn::Shape y = a.empty() ? snn::Shape{} : snn::Shape{a[0], out};
  OpConstant bias;
  const bool has_c = c.has_input(2) && beta != 0.0;
  if (!has_c || (c.is_const(c.input(2)) && gemm_bias(c, out, beta, bias))) {
    const bool keep_c = has_c && beta == 1.0 && c.constant(2).shape == snn::Shape{out};
    const int bid = !has_c ? -1 : keep_c ? c.input(2) : c.new_constant("bias", bias);
    c.emit("linear", {c.input(0), wid, bid}, {y});
    return;
  }
  if (!c.is_const(c.input(2)) && beta != 1.0) return c.unmapped("Gemm(scaled C)", "beta scales a computed C");
  const int partial = c.add_intermediate("matmul", y);  // x·Wᵀ, then + beta·C
  c.emit_into("linear", {c.input(0), wid, -1}, {partial});
  const int cid = c.is_const(c.input(2)) ? c.new_constant("C", scaled(c.constant(2), beta)) : c.input(2);
  (void)n;
  c.emit_into("add", {partial, cid}, {c.output_value(0, y)});
}

void op_matmul(Converter& c, const Node& n) {
  const bool a_const = c.is_const(c.input(0)), b_const = c.is_const(c.input(1));
  if (a_const == b_const) return c.unmapped(n.op_type, a_const ? "" : "a product of two activations");
  const snn::Shape a = known_shape(c, 0), b = known_shape(c, 1);
  if ((b_const ? b : a).size() != 2) return c.unmapped(n.op_type, "the constant side is not a matrix");
  snn::Shape y;
  if (b_const && !a.empty() && a.back() == b[0]) y = a, y.back() = b[1];
  if (a_const && b.size() >= 2 && b[b.size() - 2] == a[1]) y = b, y[y.size() - 2] = a[0];
  c.emit("matmul", {c.input(0), c.input(1)}, {y});
}

}  // namespace

void add_resize_handlers(HandlerTable& t);

void add_nn_handlers(HandlerTable& t) {
  t["Relu"] = op_relu;
  t["Clip"] = op_clip;
  t["BatchNormalization"] = op_batch_norm;
  t["Gemm"] = op_gemm;
  t["MatMul"] = op_matmul;
  add_resize_handlers(t);
}

}  // namespace snn::conversion::onnx
