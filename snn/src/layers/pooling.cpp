#include "snn/layers/pooling.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "snn/error.hpp"

namespace snn {

namespace {
// PyTorch's pooling_output_shape (dilation 1): floor division, and in ceil mode the last window must
// start inside the input or its left padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  const int64_t num = in + 2 * p - (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}
}  // namespace

PoolLayer::PoolLayer(std::string name, PoolSpec spec) : Layer(std::move(name)), spec_(spec) {
  if (spec_.kernel_h <= 0 || spec_.kernel_w <= 0 || spec_.stride_h <= 0 || spec_.stride_w <= 0 || spec_.pad_h < 0 ||
      spec_.pad_w < 0)
    throw Error("layer '" + this->name() + "': invalid pooling attributes");
  if (2 * spec_.pad_h > spec_.kernel_h || 2 * spec_.pad_w > spec_.kernel_w)
    throw Error("layer '" + this->name() + "': padding must be at most half the kernel size");
}

Shape PoolLayer::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1 || inputs[0].size() != 3) fail("expects one input of shape [C, H, W]");
  const Shape& in = inputs[0];
  const int64_t ho = pooled_size(in[1], spec_.kernel_h, spec_.stride_h, spec_.pad_h, spec_.ceil_mode);
  const int64_t wo = pooled_size(in[2], spec_.kernel_w, spec_.stride_w, spec_.pad_w, spec_.ceil_mode);
  if (in[1] <= 0 || in[2] <= 0 || ho <= 0 || wo <= 0)
    fail("input " + to_string(in) + " smaller than the pooling window");
  return {in[0], ho, wo};
}

PoolGeometry PoolLayer::geometry(int64_t h, int64_t w) const {
  PoolGeometry g;
  g.kernel_h = spec_.kernel_h;
  g.kernel_w = spec_.kernel_w;
  g.stride_h = spec_.stride_h;
  g.stride_w = spec_.stride_w;
  g.pad_h = spec_.pad_h;
  g.pad_w = spec_.pad_w;
  g.h = h;
  g.w = w;
  const Shape os = output_shape({{1, h, w}});
  g.out_h = os[1];
  g.out_w = os[2];
  g.count_include_pad = spec_.count_include_pad;
  return g;
}

std::string PoolLayer::summary() const {
  std::ostringstream os;
  os << "k" << spec_.kernel_h << "x" << spec_.kernel_w << " s" << spec_.stride_h << " p" << spec_.pad_h;
  if (spec_.ceil_mode) os << " ceil_mode";
  if (!spec_.count_include_pad) os << " count_include_pad=0";
  return os.str();
}

LayerRecord PoolLayer::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.numbers = {{"kernel_h", double(spec_.kernel_h)},
               {"kernel_w", double(spec_.kernel_w)},
               {"stride_h", double(spec_.stride_h)},
               {"stride_w", double(spec_.stride_w)},
               {"pad_h", double(spec_.pad_h)},
               {"pad_w", double(spec_.pad_w)},
               {"ceil_mode", spec_.ceil_mode ? 1.0 : 0.0},
               {"count_include_pad", spec_.count_include_pad ? 1.0 : 0.0}};
  return r;
}

PoolSpec PoolLayer::spec_from_record(const LayerRecord& r) {
  PoolSpec s;
  s.kernel_h = r.count("kernel_h");
  s.kernel_w = r.count("kernel_w");
  s.stride_h = r.count("stride_h");
  s.stride_w = r.count("stride_w");
  s.pad_h = r.count("pad_h");
  s.pad_w = r.count("pad_w");
  // Absent in version-1 files, which knew only PyTorch's defaults.
  s.ceil_mode = r.number_or("ceil_mode", 0.0) != 0.0;
  s.count_include_pad = r.number_or("count_include_pad", 1.0) != 0.0;
  return s;
}

std::unique_ptr<Layer> AvgPool2d::from_record(const LayerRecord& r) {
  return std::make_unique<AvgPool2d>(r.name, spec_from_record(r));
}

std::string MaxPool2d::summary() const {
  return PoolLayer::summary() + " spiking: emits the increase of the window's largest running input sum";
}

std::unique_ptr<Layer> MaxPool2d::from_record(const LayerRecord& r) {
  return std::make_unique<MaxPool2d>(r.name, spec_from_record(r));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(std::string name, int64_t out_h, int64_t out_w)
    : Layer(std::move(name)), out_h_(out_h), out_w_(out_w) {
  if (out_h_ <= 0 || out_w_ <= 0)
    fail("output size " + std::to_string(out_h_) + "x" + std::to_string(out_w_) + " must be positive");
}

Shape AdaptiveAvgPool2d::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1 || inputs[0].size() != 3) fail("expects one input of shape [C, H, W]");
  const Shape& in = inputs[0];
  if (in[1] <= 0 || in[2] <= 0) fail("input " + to_string(in) + " has an empty plane");
  return {in[0], out_h_, out_w_};
}

PoolGeometry AdaptiveAvgPool2d::geometry(int64_t h, int64_t w) const {
  PoolGeometry g;
  g.h = h;
  g.w = w;
  g.out_h = out_h_;
  g.out_w = out_w_;
  g.adaptive = true;
  return g;
}

std::string AdaptiveAvgPool2d::summary() const { return "to " + std::to_string(out_h_) + "x" + std::to_string(out_w_); }

LayerRecord AdaptiveAvgPool2d::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.numbers = {{"out_h", double(out_h_)}, {"out_w", double(out_w_)}};
  return r;
}

std::unique_ptr<Layer> AdaptiveAvgPool2d::from_record(const LayerRecord& r) {
  return std::make_unique<AdaptiveAvgPool2d>(r.name, r.count("out_h"), r.count("out_w"));
}

namespace {
const bool registered_avgpool2d = register_layer_type("avgpool2d", AvgPool2d::from_record);
const bool registered_maxpool2d = register_layer_type("maxpool2d", MaxPool2d::from_record);
const bool registered_adaptive_avgpool2d = register_layer_type("adaptive_avgpool2d", AdaptiveAvgPool2d::from_record);
}  // namespace

}  // namespace snn
