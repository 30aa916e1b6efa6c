// ATen -> canonical: convolution, batch norm, linear (and the addmm/mm/matmul of decomposed graphs),
// pooling, ReLU and the clamps.
#include "import/pt2/aten_ops.hpp"
#include "import/pt2/common.hpp"

namespace snn::conversion::pt2 {

namespace {

using Ints = std::vector<int64_t>;

Ints pad4(const Ints& p) { return {p[0], p[1], p[0], p[1]}; }

// conv2d.padding's "same"/"valid": PyTorch pads the odd extra pixel at the bottom/right.
Ints string_padding(NodeContext& c, const std::string& mode, int weight, const Ints& stride, const Ints& dilation) {
  if (mode == "valid") return {0, 0, 0, 0};
  if (mode != "same") c.fail("padding '" + mode + "' is neither 'same' nor 'valid'");
  const snn::Shape& w = c.b.shape(weight);
  if (w.size() != 4) c.fail("padding 'same' needs the weight's shape");
  if (stride != Ints{1, 1}) c.fail("padding 'same' with a stride other than 1");
  for (int64_t d : dilation)
    if (d < 1 || d > (int64_t(1) << 20)) c.fail("has dilation " + std::to_string(d));
  const int64_t th = dilation[0] * (w[2] - 1), tw = dilation[1] * (w[3] - 1);
  return {th / 2, tw / 2, th - th / 2, tw - tw / 2};
}

void conv2d(NodeContext& c) {
  const int x = c.tensor("input"), w = c.tensor("weight"), bias = c.opt_tensor("bias");
  const Ints stride = c.pair("stride", Ints{1, 1}), dilation = c.pair("dilation", Ints{1, 1});
  const Ints padding = c.is_kind("padding", Arg::Kind::String) ? string_padding(c, *c.str("padding"), w, stride, dilation)
                                                                : pad4(c.pair("padding", Ints{0, 0}));
  c.emit("conv2d", {x, w, bias}, {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", c.i64("groups", 1)}});
}

// aten.convolution (Core ATen): 2-D, not transposed; anything else stays unmapped.
void convolution(NodeContext& c) {
  if (c.flag("transposed", false)) return c.unmapped(c.node.target + " (transposed)");
  const Ints stride = c.ints("stride");
  if (stride.size() != 2 || c.b.shape(c.tensor("weight")).size() != 4) return c.unmapped();
  c.emit("conv2d", {c.tensor("input"), c.tensor("weight"), c.opt_tensor("bias")},
         {{"stride", c.pair("stride")}, {"padding", pad4(c.pair("padding"))}, {"dilation", c.pair("dilation")},
          {"groups", c.i64("groups", 1)}});
}

void batch_norm_eval(NodeContext& c) {
  c.emit("batch_norm",
         {c.tensor("input"), c.opt_tensor("weight"), c.opt_tensor("bias"), c.tensor("running_mean"), c.tensor("running_var")},
         {{"eps", c.f64("eps")}}, "a batch statistic of batch norm");
}

// Batch statistics cannot be folded into a layer: a model exported in train mode is refused as such.
[[noreturn]] void batch_norm_training(NodeContext& c) {
  c.fail("runs batch norm in training mode (batch statistics); call model.eval() before torch.export.export");
}

// batch_norm / native_batch_norm: only in inference mode (running statistics, no update).
void batch_norm(NodeContext& c) {
  if (c.flag("training", false)) batch_norm_training(c);
  if (!c.given("running_mean") || !c.given("running_var")) return c.unmapped();
  batch_norm_eval(c);
}

void linear(NodeContext& c) { c.emit("linear", {c.tensor("input"), c.tensor("weight"), c.opt_tensor("bias")}); }

bool is_matrix(NodeContext& c, int id) { return c.b.is_constant(id) && !c.b.at(id).constant.is_int && c.b.shape(id).size() == 2; }

// mat2 of x·mat2 as a linear weight [out, in]: the parameter itself when mat2 is its folded transpose.
int linear_weight(NodeContext& c, int mat2, double alpha) {
  auto it = c.b.transpose_of.find(mat2);
  if (alpha == 1.0 && it != c.b.transpose_of.end()) return it->second;
  OpConstant w = transpose2d(c.b.at(mat2).constant);
  for (float& v : w.values) v = float(v * alpha);
  return c.b.add_constant(c.node.name + ".weight", std::move(w));
}

// addmm(bias, x, mat2, beta, alpha) = beta·bias + alpha·x·mat2: linear when mat2 and bias are constants.
void addmm(NodeContext& c) {
  const int bias = c.tensor("self"), x = c.tensor("mat1"), mat2 = c.tensor("mat2");
  const double beta = c.f64("beta", 1.0), alpha = c.f64("alpha", 1.0);
  if (!is_matrix(c, mat2) || !c.b.is_constant(bias) || c.b.at(bias).constant.is_int) return c.unmapped();
  const int64_t out = c.b.shape(mat2)[1];
  const OpConstant& bc = c.b.at(bias).constant;
  if (bc.numel() != out || bc.shape.empty() || bc.shape.back() != out) return c.unmapped();  // broadcast bias
  int b = bias;
  if (beta != 1.0 || bc.shape.size() != 1) {
    OpConstant scaled = OpConstant::of({out}, bc.values);
    for (float& v : scaled.values) v = float(v * beta);
    b = c.b.add_constant(c.node.name + ".bias", std::move(scaled));
  }
  c.emit("linear", {x, linear_weight(c, mat2, alpha), b});
}

// mm / matmul: linear when the right side is a constant matrix, else the canonical matmul.
void matmul_with(NodeContext& c, const char* left, const char* right) {
  const int a = c.tensor(left), w = c.tensor(right);
  if (is_matrix(c, w)) return c.emit("linear", {a, linear_weight(c, w, 1.0), -1});
  c.emit("matmul", {a, w});
}
void mm(NodeContext& c) { matmul_with(c, "self", "mat2"); }
void matmul(NodeContext& c) { matmul_with(c, "self", "other"); }

void max_pool2d(NodeContext& c) {
  const Ints kernel = c.pair("kernel_size");
  Ints stride = c.ints("stride", Ints{});
  stride = stride.empty() ? kernel : c.pair("stride");
  c.emit("max_pool2d", {c.tensor("self")},
         {{"kernel", kernel}, {"stride", stride}, {"padding", pad4(c.pair("padding", Ints{0, 0}))},
          {"dilation", c.pair("dilation", Ints{1, 1})}, {"ceil_mode", int64_t(c.flag("ceil_mode", false))}},
         "the indices of max pooling");
}

void avg_pool2d(NodeContext& c) {
  if (c.given("divisor_override")) return c.unmapped();
  const Ints kernel = c.pair("kernel_size");
  Ints stride = c.ints("stride", Ints{});
  stride = stride.empty() ? kernel : c.pair("stride");
  c.emit("avg_pool2d", {c.tensor("self")},
         {{"kernel", kernel}, {"stride", stride}, {"padding", pad4(c.pair("padding", Ints{0, 0}))},
          {"ceil_mode", int64_t(c.flag("ceil_mode", false))}, {"count_include_pad", int64_t(c.flag("count_include_pad", true))}});
}

void adaptive_avg_pool2d(NodeContext& c) {
  c.emit("adaptive_avg_pool2d", {c.tensor("self")}, {{"output_size", c.pair("output_size")}});
}

// mean.dim / mean.default: no dims (or None) is every dim.
void mean(NodeContext& c) {
  const int x = c.tensor("self");
  Ints dims = c.ints("dim", Ints{});
  if (dims.empty())
    for (int d = 0; d < c.rank_of(x); ++d) dims.push_back(d);
  c.emit("mean", {x}, {{"dims", dims}, {"keepdim", int64_t(c.flag("keepdim", false))}});
}

void relu(NodeContext& c) { c.emit("relu", {c.tensor("self")}); }

void clamp_between(NodeContext& c, std::optional<double> lo, std::optional<double> hi) {
  Attrs attrs;
  if (lo) attrs["min"] = *lo;
  if (hi) attrs["max"] = *hi;
  c.emit("clamp", {c.tensor("self")}, std::move(attrs));
}
void hardtanh(NodeContext& c) { clamp_between(c, c.f64("min_val", -1.0), c.f64("max_val", 1.0)); }
void relu6(NodeContext& c) { clamp_between(c, 0.0, 6.0); }
void clamp(NodeContext& c) { clamp_between(c, c.opt_number("min"), c.opt_number("max")); }
void clamp_min(NodeContext& c) { clamp_between(c, c.f64("min"), std::nullopt); }
void clamp_max(NodeContext& c) { clamp_between(c, std::nullopt, c.f64("max")); }

// clamp.Tensor: bounds that are one-element constants are plain clamps.
void clamp_tensor(NodeContext& c) {
  std::optional<double> bound[2];
  const char* names[2] = {"min", "max"};
  for (int i = 0; i < 2; ++i) {
    const int t = c.opt_tensor(names[i]);
    if (t < 0) continue;
    const OpValue& v = c.b.at(t);
    if (!v.is_constant || v.constant.numel() != 1) return c.unmapped();
    bound[i] = v.constant.is_int ? double(v.constant.ints.at(0)) : double(v.constant.values.at(0));
  }
  clamp_between(c, bound[0], bound[1]);
}

}  // namespace

void add_layer_ops(MapperTable& t) {
  for (const char* k : {"aten.conv2d.default", "aten.conv2d.padding"}) t[k] = conv2d;
  t["aten.convolution.default"] = convolution;
  t["aten.batch_norm.default"] = batch_norm;
  t["aten.native_batch_norm.default"] = batch_norm;
  t["aten._native_batch_norm_legit_no_training.default"] = batch_norm_eval;
  for (const char* k : {"aten._native_batch_norm_legit.default", "aten._native_batch_norm_legit_functional.default",
                        "aten._native_batch_norm_legit.no_stats"})
    t[k] = batch_norm_training;
  t["aten.linear.default"] = linear;
  t["aten.addmm.default"] = addmm;
  t["aten.mm.default"] = mm;
  t["aten.matmul.default"] = matmul;
  for (const char* k : {"aten.max_pool2d.default", "aten.max_pool2d_with_indices.default"}) t[k] = max_pool2d;
  t["aten.avg_pool2d.default"] = avg_pool2d;
  for (const char* k : {"aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default"}) t[k] = adaptive_avg_pool2d;
  for (const char* k : {"aten.mean.dim", "aten.mean.default"}) t[k] = mean;
  for (const char* k : {"aten.relu.default", "aten.relu_.default"}) t[k] = relu;
  for (const char* k : {"aten.hardtanh.default", "aten.hardtanh_.default"}) t[k] = hardtanh;
  for (const char* k : {"aten.relu6.default", "aten.relu6_.default"}) t[k] = relu6;
  for (const char* k : {"aten.clamp.default", "aten.clamp_.default"}) t[k] = clamp;
  for (const char* k : {"aten.clamp_min.default", "aten.clamp_min_.default"}) t[k] = clamp_min;
  for (const char* k : {"aten.clamp_max.default", "aten.clamp_max_.default"}) t[k] = clamp_max;
  t["aten.clamp.Tensor"] = clamp_tensor;
}

}  // namespace snn::conversion::pt2
