// ONNX ops that move data without computing: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
// Split, Slice. Each folds to a constant when its data input is a constant (shape arithmetic, ops on
// initializers) and otherwise emits the canonical op (op_graph.hpp) with its static output shape.
#include <algorithm>
#include <numeric>

#include "import/onnx/const_fold.hpp"
#include "import/onnx/onnx_convert.hpp"
#include "snn/error.hpp"

namespace snn::conversion::onnx {

namespace {

// Axes from the attribute (older opsets) or from input `index` (newer ones); `present` says whether given.
std::vector<int64_t> axes_of(const Converter& c, size_t index, bool& present) {
  present = c.has_attr("axes") || c.has_input(index);
  return c.has_attr("axes") ? c.attr_ints("axes") : c.has_input(index) ? c.const_ints(index) : std::vector<int64_t>{};
}

snn::Shape resolve_reshape(Converter& c, const snn::Shape& in, const std::vector<int64_t>& target, bool allowzero) {
  snn::Shape out(target.begin(), target.end());
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 0 && !allowzero) {
      if (d >= in.size()) c.fail("reshape target copies dimension " + std::to_string(d) + " of a rank-" + std::to_string(in.size()) + " input");
      out[d] = in[d];
    }
    if (out[d] == -1) {
      if (infer >= 0) c.fail("reshape target " + snn::to_string(target) + " has more than one -1");
      infer = int(d);
    } else if (out[d] < 0) {
      c.fail("reshape target " + snn::to_string(target) + " has a negative dimension");
    } else {
      if (out[d] != 0 && known > (int64_t(1) << 40) / out[d]) c.fail("reshape target " + snn::to_string(target) + " is too large");
      known *= out[d];
    }
  }
  const int64_t total = fold::bounded_numel(in);
  if (total < 0) c.fail("reshape of " + snn::to_string(in) + " to " + snn::to_string(target) + ": too many elements");
  if (infer >= 0) {
    if (known == 0 || total % known != 0) c.fail("cannot reshape " + snn::to_string(in) + " to " + snn::to_string(target));
    out[size_t(infer)] = total / known;
  }
  if (fold::bounded_numel(out) != total) c.fail("cannot reshape " + snn::to_string(in) + " to " + snn::to_string(target));
  return out;
}

void emit_reshape(Converter& c, const snn::Shape& out) {
  if (c.is_const(c.input(0))) {
    c.bind_constant(0, folded(c, [&] { return fold::reshape(c.constant(0), out); }));
    return;
  }
  c.emit("reshape", {c.input(0)}, {out}).attrs["shape"] = std::vector<int64_t>(out.begin(), out.end());
}

void op_reshape(Converter& c, const Node&) {
  const std::vector<int64_t> target = c.has_input(1) ? c.const_ints(1) : c.attr_ints("shape");
  emit_reshape(c, resolve_reshape(c, c.input_shape(0), target, c.attr_int("allowzero", 0) != 0));
}

void op_flatten(Converter& c, const Node&) {
  const snn::Shape in = known_shape(c, 0);
  const int64_t axis = c.attr_int("axis", 1);
  if (axis == 1 && !c.is_const(c.input(0))) {
    snn::Shape out;
    if (!in.empty()) out = {in[0], std::accumulate(in.begin() + 1, in.end(), int64_t(1), std::multiplies<int64_t>())};
    OpNode& n = c.emit("flatten", {c.input(0)}, {out});
    n.attrs["start_dim"] = int64_t(1), n.attrs["end_dim"] = int64_t(-1);
    return;
  }
  const snn::Shape s = c.input_shape(0);
  const int64_t r = int64_t(s.size());
  if (axis < -r || axis > r) c.fail("axis " + std::to_string(axis) + " is out of range");
  const size_t a = size_t(axis < 0 ? axis + r : axis);
  const int64_t lead = std::accumulate(s.begin(), s.begin() + long(a), int64_t(1), std::multiplies<int64_t>());
  emit_reshape(c, {lead, fold::bounded_numel(s) / std::max<int64_t>(lead, 1)});
}

void op_squeeze(Converter& c, const Node&) {
  const snn::Shape in = c.input_shape(0);
  bool given = false;
  std::vector<int64_t> axes = axes_of(c, 1, given);
  std::vector<bool> drop(in.size(), false);
  for (size_t d = 0; d < in.size(); ++d) drop[d] = !given && in[d] == 1;
  for (int64_t& a : axes) {
    a = axis_in(c, a, in.size());
    if (in[size_t(a)] != 1) c.fail("cannot squeeze dimension " + std::to_string(a) + " of size " + std::to_string(in[size_t(a)]));
    drop[size_t(a)] = true;
  }
  snn::Shape out;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < in.size(); ++d) {
    if (drop[d]) dims.push_back(int64_t(d));
    else out.push_back(in[d]);
  }
  if (c.is_const(c.input(0))) return emit_reshape(c, out);
  c.emit("squeeze", {c.input(0)}, {out}).attrs["dims"] = dims;
}

void op_unsqueeze(Converter& c, const Node&) {
  const snn::Shape in = c.input_shape(0);
  bool given = false;
  std::vector<int64_t> axes = axes_of(c, 1, given);
  const size_t rank = in.size() + axes.size();
  std::vector<bool> inserted(rank, false);
  for (int64_t& a : axes) {
    if (a < -int64_t(rank) || a >= int64_t(rank)) c.fail("axis " + std::to_string(a) + " is out of range");
    a = a < 0 ? a + int64_t(rank) : a;
    if (inserted[size_t(a)]) c.fail("axis " + std::to_string(a) + " is repeated");
    inserted[size_t(a)] = true;
  }
  std::sort(axes.begin(), axes.end());
  snn::Shape out;
  for (size_t d = 0, k = 0; d < rank; ++d) out.push_back(inserted[d] ? 1 : in[k++]);
  if (c.is_const(c.input(0))) return emit_reshape(c, out);
  c.emit("unsqueeze", {c.input(0)}, {out}).attrs["dims"] = axes;
}

void op_transpose(Converter& c, const Node&) {
  const snn::Shape in = known_shape(c, 0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty()) {
    if (in.empty() && !c.is_const(c.input(0))) c.fail("Transpose without perm needs the input's rank");
    for (size_t d = in.size(); d-- > 0;) perm.push_back(int64_t(d));
  }
  if (c.is_const(c.input(0))) {
    c.bind_constant(0, folded(c, [&] { return fold::transpose(c.constant(0), perm); }));
    return;
  }
  std::vector<bool> seen(perm.size(), false);
  for (int64_t& p : perm) {
    p = axis_in(c, p, perm.size());
    if (seen[size_t(p)]) c.fail("perm repeats axis " + std::to_string(p));
    seen[size_t(p)] = true;
  }
  snn::Shape out;
  if (!in.empty() && in.size() != perm.size()) c.fail("perm of rank " + std::to_string(perm.size()) + " for a rank-" + std::to_string(in.size()) + " input");
  for (size_t d = 0; d < perm.size() && !in.empty(); ++d) out.push_back(in[size_t(perm[d])]);
  c.emit("permute", {c.input(0)}, {out}).attrs["perm"] = perm;
}

void op_concat(Converter& c, const Node& n) {
  if (!c.has_attr("axis")) c.fail("Concat has no axis");
  const int64_t axis = c.attr_int("axis", 0);
  if (c.all_inputs_const()) {
    std::vector<const OpConstant*> parts;
    for (size_t i = 0; i < n.inputs.size(); ++i) parts.push_back(&c.constant(i));
    c.bind_constant(0, folded(c, [&] { return fold::concat(parts, axis); }));
    return;
  }
  std::vector<int> ins;
  snn::Shape out;
  int64_t ax = axis;
  bool known = true;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    ins.push_back(c.input(i));
    const snn::Shape s = known_shape(c, i);
    known = known && !s.empty();
    if (s.empty()) continue;
    if (ax < 0) ax += int64_t(s.size());
    if (ax < 0 || ax >= int64_t(s.size())) c.fail("axis " + std::to_string(axis) + " is out of range");
    if (out.empty()) out = s, out[size_t(ax)] = 0;
    if (s.size() != out.size()) c.fail("inputs of different ranks");
    out[size_t(ax)] += s[size_t(ax)];
  }
  c.emit("cat", ins, {known ? out : snn::Shape{}}).attrs["dim"] = ax;
}


std::vector<int64_t> split_sizes(Converter& c, const Node& n, int64_t dim) {
  std::vector<int64_t> sizes = c.has_input(1) ? c.const_ints(1) : c.attr_ints("split");
  const int64_t parts = c.has_attr("num_outputs") ? c.attr_int("num_outputs", 1) : int64_t(n.outputs.size());
  if (sizes.empty()) {
    if (parts <= 0 || parts > dim + 1) c.fail("cannot split a dimension of " + std::to_string(dim) + " into " + std::to_string(parts));
    const int64_t each = (dim + parts - 1) / parts;  // the last part takes what remains (opset 18)
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::min(each, std::max<int64_t>(0, dim - k * each)));
  }
  if (sizes.size() != n.outputs.size()) c.fail(std::to_string(sizes.size()) + " split sizes for " + std::to_string(n.outputs.size()) + " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("negative split size");
    total += s;
  }
  if (total != dim) c.fail("split sizes add up to " + std::to_string(total) + ", not the dimension's " + std::to_string(dim));
  return sizes;
}

void op_split(Converter& c, const Node& n) {
  const snn::Shape in = c.input_shape(0);
  const int64_t axis = axis_in(c, c.attr_int("axis", 0), in.size());
  const std::vector<int64_t> sizes = split_sizes(c, n, in[size_t(axis)]);
  std::vector<snn::Shape> outs;
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    snn::Shape s = in;
    s[size_t(axis)] = sizes[k];
    if (c.is_const(c.input(0))) {
      std::vector<int64_t> starts(in.size(), 0), counts(in.begin(), in.end()), steps(in.size(), 1);
      starts[size_t(axis)] = start, counts[size_t(axis)] = sizes[k];
      c.bind_constant(k, folded(c, [&] { return fold::slice(c.constant(0), starts, counts, steps); }));
    }
    outs.push_back(s);
    start += sizes[k];
  }
  if (c.is_const(c.input(0))) return;
  OpNode& node = c.emit("split", {c.input(0)}, outs);
  node.attrs["dim"] = axis;
  node.attrs["sizes"] = sizes;
}

// Per dimension of `in`: start, element count and step of an ONNX Slice (starts/ends/axes/steps).
void slice_plan(Converter& c, const snn::Shape& in, std::vector<int64_t>& starts, std::vector<int64_t>& counts,
                std::vector<int64_t>& steps) {
  const bool inputs = c.opset() >= 10;
  const std::vector<int64_t> st = inputs ? c.const_ints(1) : c.attr_ints("starts");
  const std::vector<int64_t> en = inputs ? c.const_ints(2) : c.attr_ints("ends");
  std::vector<int64_t> axes = inputs ? (c.has_input(3) ? c.const_ints(3) : std::vector<int64_t>{}) : c.attr_ints("axes");
  const std::vector<int64_t> sp = inputs && c.has_input(4) ? c.const_ints(4) : std::vector<int64_t>(st.size(), 1);
  if (axes.empty())
    for (size_t k = 0; k < st.size(); ++k) axes.push_back(int64_t(k));
  if (en.size() != st.size() || axes.size() != st.size() || sp.size() != st.size())
    c.fail("starts, ends, axes and steps of different lengths");
  starts.assign(in.size(), 0);
  counts.assign(in.begin(), in.end());
  steps.assign(in.size(), 1);
  for (size_t k = 0; k < st.size(); ++k) {
    const size_t a = size_t(axis_in(c, axes[k], in.size()));
    if (sp[k] == 0) c.fail("Slice step 0");
    int64_t start = st[k];
    counts[a] = fold::slice_bounds(in[a], start, en[k], sp[k]);
    starts[a] = start, steps[a] = counts[a] > 1 ? sp[k] : 1;  // a step past the end: one element
  }
}

void op_slice(Converter& c, const Node&) {
  const snn::Shape in = c.input_shape(0);
  std::vector<int64_t> starts, counts, steps;
  slice_plan(c, in, starts, counts, steps);
  if (c.is_const(c.input(0))) {
    c.bind_constant(0, folded(c, [&] { return fold::slice(c.constant(0), starts, counts, steps); }));
    return;
  }
  std::vector<size_t> dims;  // the dimensions this Slice changes
  for (size_t d = 0; d < in.size(); ++d)
    if (counts[d] != in[d] || (steps[d] != 1 && in[d] > 1)) dims.push_back(d);
  for (size_t d : dims)
    if (steps[d] < 0) return c.unmapped("Slice(negative step)", "PyTorch slices have positive steps");
  if (dims.empty()) return void(c.emit("identity", {c.input(0)}, {in}));
  int prev = c.input(0);
  snn::Shape shape = in;
  for (size_t k = 0; k < dims.size(); ++k) {
    const size_t d = dims[k];
    shape[d] = counts[d];
    const bool last = k + 1 == dims.size();
    const int out = last ? c.output_value(0, shape) : c.add_intermediate("dim" + std::to_string(d), shape);
    OpNode& n = c.emit_into("slice", {prev}, {out});
    n.attrs["dim"] = int64_t(d), n.attrs["start"] = starts[d], n.attrs["step"] = steps[d];
    n.attrs["end"] = counts[d] ? starts[d] + (counts[d] - 1) * steps[d] + 1 : starts[d];
    prev = out;
  }
}

}  // namespace

void add_shape_handlers(HandlerTable& t) {
  t["Reshape"] = op_reshape;
  t["Flatten"] = op_flatten;
  t["Squeeze"] = op_squeeze;
  t["Unsqueeze"] = op_unsqueeze;
  t["Transpose"] = op_transpose;
  t["Concat"] = op_concat;
  t["Split"] = op_split;
  t["Slice"] = op_slice;
}

}  // namespace snn::conversion::onnx
