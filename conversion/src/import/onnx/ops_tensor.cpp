// ONNX ops that compute elementwise or make constants: Constant, ConstantOfShape, Shape, Size, Gather,
// Cast, Identity, Dropout, arithmetic (Add Sub Mul Div Max Min, Neg Floor Ceil Round...), comparisons and
// Where. On constant inputs they fold (shape arithmetic); on activations they emit the canonical op, and
// the ops with no canonical counterpart stay unmapped under their own name.
#include <algorithm>

#include "import/onnx/const_fold.hpp"
#include "import/onnx/onnx_convert.hpp"
#include "snn/error.hpp"

namespace snn::conversion::onnx {

namespace {

bool is_int_type(int64_t t) { return t != kFloat && t != kDouble && t != kFloat16 && t != kBfloat16; }

OpConstant ints_constant(snn::Shape shape, std::vector<int64_t> v) {
  OpConstant c;
  c.shape = std::move(shape);
  c.ints = std::move(v);
  c.is_int = true;
  return c;
}

void op_constant(Converter& c, const Node& n) {
  if (const Tensor* t = c.attr_tensor("value")) return c.bind_constant(0, c.tensor_constant(*t, "value"));
  if (c.has_attr("value_float")) return c.bind_constant(0, OpConstant::scalar(c.attr_float("value_float", 0)));
  if (c.has_attr("value_int")) return c.bind_constant(0, ints_constant({}, {c.attr_int("value_int", 0)}));
  if (c.has_attr("value_floats")) {
    const std::vector<double> v = c.attr_floats("value_floats");
    return c.bind_constant(0, OpConstant::of({int64_t(v.size())}, std::vector<float>(v.begin(), v.end())));
  }
  if (c.has_attr("value_ints")) {
    std::vector<int64_t> v = c.attr_ints("value_ints");
    const int64_t size = int64_t(v.size());
    return c.bind_constant(0, ints_constant({size}, std::move(v)));
  }
  (void)n;
  c.fail("a Constant that is not a numeric tensor (string or sparse value); snnc reads numeric constants only");
}

void op_constant_of_shape(Converter& c, const Node&) {
  const std::vector<int64_t> dims = c.const_ints(0);
  OpConstant value = OpConstant::of({1}, {0.0f});
  if (const Tensor* t = c.attr_tensor("value")) value = c.tensor_constant(*t, "value");
  c.bind_constant(0, folded(c, [&] { return fold::fill(snn::Shape(dims.begin(), dims.end()), value); }));
}

void op_shape(Converter& c, const Node&) {
  const snn::Shape s = c.input_shape(0);
  const int64_t r = int64_t(s.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  start = std::clamp(start < 0 ? start + r : start, int64_t(0), r);
  end = std::clamp(end < 0 ? end + r : end, int64_t(0), r);
  std::vector<int64_t> v(s.begin() + start, s.begin() + std::max(start, end));
  const int64_t size = int64_t(v.size());
  c.bind_constant(0, ints_constant({size}, std::move(v)));
}

void op_size(Converter& c, const Node&) { c.bind_constant(0, ints_constant({}, {fold::bounded_numel(c.input_shape(0))})); }

void op_gather(Converter& c, const Node& n) {
  if (!c.all_inputs_const()) return c.unmapped(n.op_type, "indexing an activation");
  c.bind_constant(0, folded(c, [&] { return fold::gather(c.constant(0), c.constant(1), c.attr_int("axis", 0)); }));
}

void op_identity(Converter& c, const Node&) {
  if (c.is_const(c.input(0))) return c.bind_constant(0, c.constant(0));
  c.emit("identity", {c.input(0)}, {known_shape(c, 0)});
}

void op_dropout(Converter& c, const Node& n) {
  if (c.has_input(2) && c.is_const(c.input(2)) && c.const_ints(2) != std::vector<int64_t>{0})
    return c.unmapped("Dropout(training_mode)", "dropout in training mode is random");
  if (c.output_used(1)) return c.unmapped("Dropout(mask)", "its mask output is used");
  op_identity(c, n);
}

void op_cast(Converter& c, const Node&) {
  const int64_t to = c.attr_int("to", kFloat);
  if (c.is_const(c.input(0))) {
    OpConstant v = folded(c, [&] { return fold::cast(c.constant(0), is_int_type(to)); });
    if (to == kBool)
      for (int64_t& x : v.ints) x = x != 0;
    return c.bind_constant(0, v);
  }
  if (to != kFloat) return c.unmapped("Cast(to=" + data_type_name(int32_t(to)) + ")", "snnc computes in float32");
  c.emit("identity", {c.input(0)}, {known_shape(c, 0)});
}

// Canonical names of the elementwise ops the lowering knows.
const char* canonical(const std::string& op) {
  if (op == "Add") return "add";
  if (op == "Sub") return "sub";
  if (op == "Mul") return "mul";
  if (op == "Div") return "div";
  if (op == "Max") return "maximum";
  if (op == "Min") return "minimum";
  if (op == "Floor") return "floor";
  if (op == "Ceil") return "ceil";
  if (op == "Round") return "round";
  if (op == "Neg") return "neg";
  if (op == "Relu") return "relu";
  return nullptr;
}

snn::Shape broadcast_known(Converter& c, size_t a, size_t b) {
  const bool ka = c.is_const(c.input(a)) || !c.shape(c.input(a)).empty();
  const bool kb = c.is_const(c.input(b)) || !c.shape(c.input(b)).empty();
  if (!ka || !kb) return {};
  try {
    return fold::broadcast_shape(known_shape(c, a), known_shape(c, b));
  } catch (const snn::Error& e) {
    c.fail(e.what());
  }
}

void op_binary(Converter& c, const Node& n) {
  if (n.inputs.size() != 2) c.fail("takes 2 inputs, has " + std::to_string(n.inputs.size()));
  if (c.all_inputs_const())
    return c.bind_constant(0, folded(c, [&] { return fold::binary(n.op_type, c.constant(0), c.constant(1)); }));
  const char* op = canonical(n.op_type);
  if (!op) return c.unmapped(n.op_type);
  c.emit(op, {c.input(0), c.input(1)}, {broadcast_known(c, 0, 1)});
}

// Max, Min: variadic; a chain of binary ops through intermediate values.
void op_variadic(Converter& c, const Node& n) {
  if (n.inputs.empty()) c.fail("has no inputs");
  if (n.inputs.size() == 1) return op_identity(c, n);
  if (n.inputs.size() == 2 || c.all_inputs_const()) {
    if (n.inputs.size() == 2) return op_binary(c, n);
    OpConstant acc = c.constant(0);
    for (size_t i = 1; i < n.inputs.size(); ++i) acc = folded(c, [&] { return fold::binary(n.op_type, acc, c.constant(i)); });
    return c.bind_constant(0, acc);
  }
  int prev = c.input(0);
  snn::Shape shape = known_shape(c, 0);
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const snn::Shape s = known_shape(c, i);
    if (!shape.empty() && !s.empty()) {
      try {
        shape = fold::broadcast_shape(shape, s);
      } catch (const snn::Error& e) {
        c.fail(e.what());
      }
    } else {
      shape.clear();
    }
    const bool last = i + 1 == n.inputs.size();
    const int out = last ? c.output_value(0, shape) : c.add_intermediate("step" + std::to_string(i), shape);
    c.emit_into(canonical(n.op_type), {prev, c.input(i)}, {out});
    prev = out;
  }
}

void op_unary(Converter& c, const Node& n) {
  if (c.is_const(c.input(0))) return c.bind_constant(0, folded(c, [&] { return fold::unary(n.op_type, c.constant(0)); }));
  const char* op = canonical(n.op_type);
  if (!op) return c.unmapped(n.op_type);
  c.emit(op, {c.input(0)}, {known_shape(c, 0)});
}

// Ops that only fold (comparisons, Where, Range, Expand, reductions of constants).
void op_fold_only(Converter& c, const Node& n) {
  if (!c.all_inputs_const()) return c.unmapped(n.op_type);
  const std::string& op = n.op_type;
  c.bind_constant(0, folded(c, [&]() -> OpConstant {
    if (op == "Where") return fold::where(c.constant(0), c.constant(1), c.constant(2));
    if (op == "Range") return fold::range(c.constant(0), c.constant(1), c.constant(2));
    if (op == "Expand") {
      const std::vector<int64_t> s = c.const_ints(1);
      return fold::expand(c.constant(0), snn::Shape(s.begin(), s.end()));
    }
    if (op == "Not") return fold::unary(op, c.constant(0));
    if (op.rfind("Reduce", 0) == 0) {
      std::vector<int64_t> axes = c.has_attr("axes") ? c.attr_ints("axes") : c.has_input(1) ? c.const_ints(1) : std::vector<int64_t>{};
      return fold::reduce(op, c.constant(0), axes, c.attr_int("keepdims", 1) != 0);
    }
    return fold::binary(op, c.constant(0), c.constant(1));
  }));
}

}  // namespace

void add_tensor_handlers(HandlerTable& t) {
  t["Constant"] = op_constant;
  t["ConstantOfShape"] = op_constant_of_shape;
  t["Shape"] = op_shape;
  t["Size"] = op_size;
  t["Gather"] = op_gather;
  t["Identity"] = op_identity;
  t["Dropout"] = op_dropout;
  t["Cast"] = op_cast;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod"}) t[op] = op_binary;
  for (const char* op : {"Max", "Min"}) t[op] = op_variadic;
  for (const char* op : {"Neg", "Floor", "Ceil", "Round", "Abs", "Sqrt", "Reciprocal", "Sign"}) t[op] = op_unary;
  for (const char* op : {"Equal", "Less", "Greater", "And", "Or", "Not", "Where", "Range", "Expand", "ReduceMax",
                         "ReduceMin", "ReduceSum", "ReduceProd"})
    t[op] = op_fold_only;
}

}  // namespace snn::conversion::onnx
