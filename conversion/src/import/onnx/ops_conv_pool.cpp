// ONNX's windowed ops: Conv, AveragePool, MaxPool, the global pools, ReduceMean. Attribute defaults are
// ONNX's; auto_pad is resolved to explicit padding (top, left, bottom, right), which needs the input's
// static shape; a zero Pad before a Conv or AveragePool (ops_layers.cpp) is folded into its padding.
#include <algorithm>
#include <cmath>

#include "import/onnx/const_fold.hpp"
#include "import/onnx/onnx_convert.hpp"
#include "snn/error.hpp"

namespace snn::conversion::onnx {

namespace {

struct Window {
  std::vector<int64_t> kernel, strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};
  bool ceil_mode = false;
};

// Kernel, strides, dilations and pads of a conv or pool; auto_pad resolved against `in` (N, C, H, W).
Window window(Converter& c, const snn::Shape& in, std::vector<int64_t> kernel) {
  Window w;
  w.kernel = c.attr_ints("kernel_shape", std::move(kernel));
  w.strides = c.attr_ints("strides", w.strides);
  w.dilations = c.attr_ints("dilations", w.dilations);
  w.pads = c.attr_ints("pads", w.pads);
  w.ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  if (w.kernel.size() != 2 || w.strides.size() != 2 || w.dilations.size() != 2 || w.pads.size() != 4)
    c.fail("expects 2-D kernel_shape, strides, dilations and 4 pads");
  for (size_t d = 0; d < 2; ++d)
    if (w.kernel[d] <= 0 || w.strides[d] <= 0 || w.dilations[d] <= 0) c.fail("has a non-positive kernel, stride or dilation");
  for (const auto* v : {&w.kernel, &w.strides, &w.dilations, &w.pads})
    for (int64_t x : *v)
      if (x > (int64_t(1) << 31)) c.fail("has a kernel, stride, dilation or padding beyond 2^31");
  for (int64_t p : w.pads)
    if (p < 0) c.fail("has negative padding");
  const std::string mode = c.attr_string("auto_pad", "NOTSET");
  if (mode == "VALID") w.pads = {0, 0, 0, 0};
  if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    if (in.size() != 4) c.fail("auto_pad " + mode + " needs the input's static shape");
    w.pads = same_pads(mode, {in[2], in[3]}, w.kernel, w.strides, w.dilations);
  } else if (mode != "NOTSET" && mode != "VALID") {
    c.fail("unknown auto_pad '" + mode + "'");
  }
  return w;
}

// Output size along one axis, PyTorch's rule (ceil mode drops a last window starting in the padding).
int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad0, int64_t pad1, bool ceil_mode) {
  const int64_t span = in + pad0 + pad1 - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad0) --out;
  return out;
}

snn::Shape window_out(const snn::Shape& in, int64_t channels, const Window& w) {
  if (in.size() != 4) return {};
  return {in[0], channels, pooled(in[2], w.kernel[0], w.strides[0], w.dilations[0], w.pads[0], w.pads[2], w.ceil_mode),
          pooled(in[3], w.kernel[1], w.strides[1], w.dilations[1], w.pads[1], w.pads[3], w.ceil_mode)};
}

void set_window(OpNode& n, const Window& w, bool dilation) {
  n.attrs["kernel"] = w.kernel;
  n.attrs["stride"] = w.strides;
  n.attrs["padding"] = w.pads;
  if (dilation) n.attrs["dilation"] = w.dilations;
  n.attrs["ceil_mode"] = int64_t(w.ceil_mode);
}

// The data input, or the input of a Pad folded into this node (its padding then added to `extra`).
int data_input(Converter& c, snn::Shape& shape, std::vector<int64_t>& extra) {
  int source = -1;
  extra.assign(4, 0);
  if (!c.take_pad(0, source, extra)) {
    shape = known_shape(c, 0);
    return c.input(0);
  }
  shape = c.shape(source);
  if (shape.size() == 4) shape[2] += extra[0] + extra[2], shape[3] += extra[1] + extra[3];
  return source;
}

void op_conv(Converter& c, const Node& n) {
  const snn::Shape wshape = known_shape(c, 1);
  if (wshape.size() != 4) return c.unmapped(n.op_type, "only 2-D convolutions are converted");
  snn::Shape in;
  std::vector<int64_t> extra;
  const int x = data_input(c, in, extra);
  Window w = window(c, in, {wshape[2], wshape[3]});
  for (size_t k = 0; k < 4; ++k) w.pads[k] += extra[k];
  if (in.size() == 4) {  // window() saw the padded size; the pads now also include the folded Pad
    in[2] -= extra[0] + extra[2], in[3] -= extra[1] + extra[3];
  }
  OpNode& node = c.emit("conv2d", {x, c.input(1), c.input(2)}, {window_out(in, wshape[0], w)});
  node.attrs["stride"] = w.strides;
  node.attrs["padding"] = w.pads;
  node.attrs["dilation"] = w.dilations;
  node.attrs["groups"] = c.attr_int("group", 1);
}

void op_avg_pool(Converter& c, const Node& n) {
  snn::Shape in;
  std::vector<int64_t> extra;
  const int x = data_input(c, in, extra);
  Window w = window(c, in, {});
  if (w.dilations != std::vector<int64_t>{1, 1}) return c.unmapped("AveragePool(dilations)", "PyTorch's avg_pool2d has no dilation");
  int64_t include_pad = c.attr_int("count_include_pad", 0);
  if (extra != std::vector<int64_t>{0, 0, 0, 0}) {  // zeros padded before: counted like any value
    for (size_t k = 0; k < 4; ++k) w.pads[k] += extra[k];
    if (in.size() == 4) in[2] -= extra[0] + extra[2], in[3] -= extra[1] + extra[3];
    include_pad = 1;
  }
  (void)n;
  OpNode& node = c.emit("avg_pool2d", {x}, {window_out(in, in.size() == 4 ? in[1] : 0, w)});
  set_window(node, w, false);
  node.attrs["count_include_pad"] = include_pad;
}

void op_max_pool(Converter& c, const Node& n) {
  if (c.output_used(1)) return c.unmapped("MaxPool(indices)", "its indices output is used");
  const snn::Shape in = known_shape(c, 0);
  const Window w = window(c, in, {});
  (void)n;
  set_window(c.emit("max_pool2d", {c.input(0)}, {window_out(in, in.size() == 4 ? in[1] : 0, w)}), w, true);
}

void op_global_avg(Converter& c, const Node&) {
  const snn::Shape in = known_shape(c, 0);
  snn::Shape out = in;
  std::vector<int64_t> dims{2, 3};
  if (!in.empty()) {
    dims.clear();
    for (size_t d = 2; d < in.size(); ++d) dims.push_back(int64_t(d)), out[d] = 1;
  }
  OpNode& node = c.emit("mean", {c.input(0)}, {out});
  node.attrs["dims"] = dims;
  node.attrs["keepdim"] = int64_t(1);
}

void op_global_max(Converter& c, const Node& n) {
  const snn::Shape in = known_shape(c, 0);
  if (in.size() != 4) return c.unmapped(n.op_type, "needs a 4-D input of known shape");
  Window w;
  w.kernel = w.strides = {in[2], in[3]};
  set_window(c.emit("max_pool2d", {c.input(0)}, {{in[0], in[1], 1, 1}}), w, true);
}

void op_reduce_mean(Converter& c, const Node& n) {
  std::vector<int64_t> axes = c.has_attr("axes") ? c.attr_ints("axes") : c.has_input(1) ? c.const_ints(1) : std::vector<int64_t>{};
  const bool keep = c.attr_int("keepdims", 1) != 0;
  if (c.is_const(c.input(0)))
    return c.bind_constant(0, folded(c, [&] { return fold::reduce(n.op_type, c.constant(0), axes, keep); }));
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0)) return void(c.emit("identity", {c.input(0)}, {known_shape(c, 0)}));
  const snn::Shape in = c.input_shape(0);
  if (axes.empty())
    for (size_t d = 0; d < in.size(); ++d) axes.push_back(int64_t(d));
  snn::Shape out;
  std::vector<bool> reduced(in.size(), false);
  for (int64_t& a : axes) reduced[size_t(a = axis_in(c, a, in.size()))] = true;
  std::sort(axes.begin(), axes.end());
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d] || keep) out.push_back(reduced[d] ? 1 : in[d]);
  OpNode& node = c.emit("mean", {c.input(0)}, {out});
  node.attrs["dims"] = axes;
  node.attrs["keepdim"] = int64_t(keep);
}

}  // namespace

void add_pool_handlers(HandlerTable& t) {
  t["Conv"] = op_conv;
  t["AveragePool"] = op_avg_pool;
  t["MaxPool"] = op_max_pool;
  t["GlobalAveragePool"] = op_global_avg;
  t["GlobalMaxPool"] = op_global_max;
  t["ReduceMean"] = op_reduce_mean;
}

}  // namespace snn::conversion::onnx
