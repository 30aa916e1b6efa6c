#include "snn/layers/pooling.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "snn/error.hpp"

namespace snn {

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
  if (in[1] + 2 * spec_.pad_h < spec_.kernel_h || in[2] + 2 * spec_.pad_w < spec_.kernel_w)
    fail("input " + to_string(in) + " smaller than the pooling window");
  return {in[0], (in[1] + 2 * spec_.pad_h - spec_.kernel_h) / spec_.stride_h + 1,
          (in[2] + 2 * spec_.pad_w - spec_.kernel_w) / spec_.stride_w + 1};
}

std::string PoolLayer::summary() const {
  std::ostringstream os;
  os << "k" << spec_.kernel_h << "x" << spec_.kernel_w << " s" << spec_.stride_h << " p" << spec_.pad_h;
  return os.str();
}

LayerRecord PoolLayer::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.numbers = {{"kernel_h", double(spec_.kernel_h)}, {"kernel_w", double(spec_.kernel_w)},
               {"stride_h", double(spec_.stride_h)}, {"stride_w", double(spec_.stride_w)},
               {"pad_h", double(spec_.pad_h)},       {"pad_w", double(spec_.pad_w)}};
  return r;
}

PoolSpec PoolLayer::spec_from_record(const LayerRecord& r) {
  PoolSpec s;
  s.kernel_h = int64_t(r.number("kernel_h"));
  s.kernel_w = int64_t(r.number("kernel_w"));
  s.stride_h = int64_t(r.number("stride_h"));
  s.stride_w = int64_t(r.number("stride_w"));
  s.pad_h = int64_t(r.number("pad_h"));
  s.pad_w = int64_t(r.number("pad_w"));
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

namespace {
const bool registered_avgpool2d = register_layer_type("avgpool2d", AvgPool2d::from_record);
const bool registered_maxpool2d = register_layer_type("maxpool2d", MaxPool2d::from_record);
}  // namespace

}  // namespace snn
