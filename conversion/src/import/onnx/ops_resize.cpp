// Resize and Upsample (nearest only) and Pad. A nearest resize maps to upsample_nearest only where its
// coordinate rounding is PyTorch's: `nearest` is asymmetric + floor, `nearest-exact` is half_pixel +
// round_prefer_ceil (or tf_half_pixel_for_nn + floor); anything else stays unmapped under a name that
// says why ("Resize(mode=linear)"). A constant zero Pad is folded into the Conv/AveragePool it feeds.
#include <algorithm>
#include <cmath>

#include "import/onnx/onnx_convert.hpp"
#include "snn/error.hpp"

namespace snn::conversion::onnx {

namespace {

// Whether the resize scales rows and columns by whole factors (the scales given, else out / in).
bool integer_scales(const snn::Shape& in, const snn::Shape& out, const std::vector<double>& scales) {
  if (in.size() != 4 || out.size() != 4) return false;
  for (size_t d = 2; d < 4; ++d) {
    const double s = scales.size() == 4 ? scales[d] : in[d] > 0 ? double(out[d]) / double(in[d]) : 0.0;
    if (!(s >= 1 && s == std::floor(s)) || out[d] != in[d] * int64_t(s)) return false;
  }
  return true;
}

// 0: PyTorch `nearest`, 1: `nearest-exact`, -1: neither.
int nearest_kind(const std::string& ctm, const std::string& rounding, const snn::Shape& in, const snn::Shape& out,
                 const std::vector<double>& scales) {
  if (ctm == "asymmetric" && rounding == "floor") return 0;
  if (ctm == "tf_half_pixel_for_nn" && rounding == "floor") return 1;
  const bool big = out.size() == 4 && out[2] > 1 && out[3] > 1;  // pytorch_half_pixel differs at size 1
  const bool half_pixel = ctm == "half_pixel" || (ctm == "pytorch_half_pixel" && big);
  if (half_pixel && rounding == "round_prefer_ceil") return 1;
  // At whole factors a half-pixel centre is never halfway between two inputs, so the rounding's tie rule
  // does not matter: ONNX's default nearest Resize (half_pixel, round_prefer_floor) upsampling by 2.
  if (half_pixel && rounding == "round_prefer_floor" && integer_scales(in, out, scales)) return 1;
  return -1;
}

int64_t scaled_size(const Converter& c, int64_t size, double scale) {
  const double v = std::floor(double(size) * scale);
  if (!(v >= 0 && v <= double(int64_t(1) << 40))) c.fail("resizing " + std::to_string(size) + " by " + std::to_string(scale) + " is out of range");
  return int64_t(v);
}

// Scales or sizes over all four dims (expanding Resize-18's `axes`); false when neither is given.
bool resize_target(Converter& c, size_t scales_in, size_t sizes_in, const snn::Shape& in, std::vector<double>& scales,
                   snn::Shape& sizes) {
  std::vector<int64_t> axes = c.attr_ints("axes");
  auto expand = [&](auto values, auto fill) {
    if (axes.empty()) return std::vector<decltype(fill)>(values.begin(), values.end());
    std::vector<decltype(fill)> full(in.size(), fill);
    if (axes.size() != values.size()) c.fail("axes and scales/sizes of different lengths");
    for (size_t k = 0; k < axes.size(); ++k) full[size_t(axis_in(c, axes[k], in.size()))] = values[k];
    return full;
  };
  if (c.has_input(scales_in) && c.constant(scales_in).numel() > 0) {
    const OpConstant& k = c.constant(scales_in);
    std::vector<double> v(k.values.begin(), k.values.end());
    scales = expand(v, 1.0);
    for (double x : scales)
      if (!(x > 0 && x <= 1e4)) c.fail("has a resize scale " + std::to_string(x) + " outside (0, 10000]");
    for (size_t d = 0; d < in.size() && d < scales.size(); ++d) sizes.push_back(scaled_size(c, in[d], scales[d]));
  } else if (c.has_input(sizes_in)) {
    const std::vector<int64_t> v = c.const_ints(sizes_in);
    std::vector<int64_t> full = expand(v, int64_t(0));
    for (size_t d = 0; d < full.size() && d < in.size(); ++d) sizes.push_back(axes.empty() || full[d] ? full[d] : in[d]);
  } else {
    return false;
  }
  if (sizes.size() != in.size()) c.fail("scales/sizes of rank " + std::to_string(sizes.size()) + " for a rank-" + std::to_string(in.size()) + " input");
  return true;
}

void emit_upsample(Converter& c, const snn::Shape& in, const std::vector<double>& scales, const snn::Shape& out, int exact) {
  if (in.size() != 4) return c.unmapped("Resize(not 4-D)", "nearest upsampling of images only");
  if (out[0] != in[0] || out[1] != in[1]) return c.unmapped("Resize(batch or channels)", "it resizes the batch or channel dimension");
  OpNode& n = c.emit("upsample_nearest", {c.input(0)}, {out});
  n.attrs["output_size"] = std::vector<int64_t>{out[2], out[3]};
  n.attrs["scales"] = scales.empty() ? std::vector<double>{0, 0} : std::vector<double>{scales[2], scales[3]};
  n.attrs["exact"] = int64_t(exact);
}

void op_resize(Converter& c, const Node&) {
  const std::string mode = c.attr_string("mode", "nearest");
  if (mode != "nearest") return c.unmapped("Resize(mode=" + mode + ")", "only nearest resizing maps to spiking layers");
  const snn::Shape in = c.input_shape(0);
  std::vector<double> scales;
  snn::Shape out;
  const bool v10 = c.opset() < 11;
  if (!resize_target(c, v10 ? 1 : 2, v10 ? 99 : 3, in, scales, out)) c.fail("has neither scales nor sizes");
  const std::string ctm = v10 ? "asymmetric" : c.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = v10 ? "floor" : c.attr_string("nearest_mode", "round_prefer_floor");
  const int kind = nearest_kind(ctm, rounding, in, out, scales);
  if (kind < 0) return c.unmapped("Resize(coordinate_transformation_mode=" + ctm + ", nearest_mode=" + rounding + ")",
                                  "not PyTorch's nearest or nearest-exact rounding");
  if (c.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch" && scales.empty())
    return c.unmapped("Resize(keep_aspect_ratio_policy)", "sizes adjusted to keep the aspect ratio");
  emit_upsample(c, in, scales, out, kind);
}

// Upsample (opsets 7-9): asymmetric + floor; scales as an attribute (7) or an input (9).
void op_upsample(Converter& c, const Node&) {
  const std::string mode = c.attr_string("mode", "nearest");
  if (mode != "nearest") return c.unmapped("Upsample(mode=" + mode + ")", "only nearest upsampling maps to spiking layers");
  const snn::Shape in = c.input_shape(0);
  std::vector<double> scales = c.attr_floats("scales");
  if (scales.empty()) {
    const OpConstant& k = c.constant(1);
    scales.assign(k.values.begin(), k.values.end());
  }
  for (double x : scales)
    if (!(x > 0 && x <= 1e4)) c.fail("has a resize scale " + std::to_string(x) + " outside (0, 10000]");
  if (scales.size() != in.size()) c.fail("scales of rank " + std::to_string(scales.size()) + " for a rank-" + std::to_string(in.size()) + " input");
  snn::Shape out;
  for (size_t d = 0; d < in.size(); ++d) out.push_back(scaled_size(c, in[d], scales[d]));
  emit_upsample(c, in, scales, out, 0);
}

// A consumer a zero padding can be folded into: any Conv, or an AveragePool that counts padding (or has
// none of its own) and does not use ceil mode (where explicit zeros and implicit padding differ).
bool absorbs_padding(const Node& n) {
  if (n.domain != "" && n.domain != "ai.onnx") return false;
  if (n.op_type == "Conv") return true;
  if (n.op_type != "AveragePool") return false;
  auto attr_i = [&](const char* name, int64_t fallback) {
    const Attribute* a = n.find(name);
    return a ? a->i : fallback;
  };
  const Attribute* pads = n.find("pads");
  const bool own = pads && std::any_of(pads->ints.begin(), pads->ints.end(), [](int64_t p) { return p != 0; });
  const Attribute* ap = n.find("auto_pad");
  return attr_i("ceil_mode", 0) == 0 && (!own || attr_i("count_include_pad", 0) == 1) && (!ap || ap->s == "NOTSET");
}

void op_pad(Converter& c, const Node& n) {
  const std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant") return c.unmapped("Pad(mode=" + mode + ")", "only zero padding is converted");
  const bool v11 = c.opset() >= 11;
  double value = v11 ? 0.0 : c.attr_float("value", 0.0);
  if (v11 && c.has_input(2)) {
    const OpConstant& k = c.constant(2);
    value = k.numel() ? (k.is_int ? double(k.ints[0]) : double(k.values[0])) : 0.0;
  }
  if (value != 0.0) return c.unmapped("Pad(value!=0)", "only zero padding is converted");
  const snn::Shape in = c.input_shape(0);
  std::vector<int64_t> pads = v11 ? c.const_ints(1) : c.attr_ints("pads");
  if (v11 && c.has_input(3)) {  // opset 18: pads for the listed axes only
    const std::vector<int64_t> axes = c.const_ints(3);
    std::vector<int64_t> full(2 * in.size(), 0);
    if (pads.size() != 2 * axes.size()) c.fail("pads and axes of different lengths");
    for (size_t k = 0; k < axes.size(); ++k) {
      const size_t a = size_t(axis_in(c, axes[k], in.size()));
      full[a] = pads[k], full[a + in.size()] = pads[k + axes.size()];
    }
    pads = full;
  }
  if (in.size() != 4 || pads.size() != 8) return c.unmapped("Pad", "padding of a tensor that is not 4-D");
  const bool spatial = pads[0] == 0 && pads[1] == 0 && pads[4] == 0 && pads[5] == 0;
  const bool positive = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p >= 0; });
  const auto& users = c.consumers(0);
  const bool foldable = !users.empty() && !c.is_graph_output(0) &&
                        std::all_of(users.begin(), users.end(), [](const Node* u) { return absorbs_padding(*u); });
  if (!spatial || !positive || !foldable || c.is_const(c.input(0)))
    return c.unmapped("Pad", "a zero padding that does not feed only convolutions or average pools");
  (void)n;
  c.defer_pad(0, c.input(0), {pads[2], pads[3], pads[6], pads[7]});
}

}  // namespace

void add_resize_handlers(HandlerTable& t) {
  t["Resize"] = op_resize;
  t["Upsample"] = op_upsample;
  t["Pad"] = op_pad;
}

}  // namespace snn::conversion::onnx
