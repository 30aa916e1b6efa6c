#include "snn/layers/conv2d.hpp"

#include <algorithm>
#include <sstream>

#include "snn/checked_math.hpp"
#include "snn/error.hpp"

namespace snn {

Conv2d::Conv2d(std::string name, Conv2dSpec spec, Tensor weight, Tensor bias)
    : Layer(std::move(name)), spec_(spec), weight_(std::move(weight)), bias_(std::move(bias)) {
  const auto& s = spec_;
  if (s.in_channels <= 0 || s.out_channels <= 0 || s.kernel_h <= 0 || s.kernel_w <= 0 || s.stride_h <= 0 ||
      s.stride_w <= 0 || s.pad_h < 0 || s.pad_w < 0 || s.groups <= 0)
    fail("invalid convolution attributes");
  if (s.in_channels % s.groups || s.out_channels % s.groups)
    fail("channels " + std::to_string(s.in_channels) + "->" + std::to_string(s.out_channels) +
         " not divisible by groups " + std::to_string(s.groups));
  Shape ws = {s.out_channels, s.in_channels / s.groups, s.kernel_h, s.kernel_w};
  if (weight_.shape() != ws) fail("weight shape " + to_string(weight_.shape()) + ", expected " + to_string(ws));
  if (!bias_.empty() && bias_.shape() != Shape{s.out_channels})
    fail("bias shape " + to_string(bias_.shape()) + ", expected [" + std::to_string(s.out_channels) + "]");
}

Shape Conv2d::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1 || inputs[0].size() != 3) fail("expects one input of shape [C, H, W]");
  const Shape& in = inputs[0];
  if (in[0] != spec_.in_channels)
    fail("input has " + std::to_string(in[0]) + " channels, layer expects " + std::to_string(spec_.in_channels));
  int64_t ho = (in[1] + 2 * spec_.pad_h - spec_.kernel_h) / spec_.stride_h + 1;
  int64_t wo = (in[2] + 2 * spec_.pad_w - spec_.kernel_w) / spec_.stride_w + 1;
  if (in[1] + 2 * spec_.pad_h < spec_.kernel_h || in[2] + 2 * spec_.pad_w < spec_.kernel_w)
    fail("input " + to_string(in) + " smaller than the kernel");
  return {spec_.out_channels, ho, wo};
}

int64_t Conv2d::macs(const std::vector<Shape>& inputs) const {
  Shape os = output_shape(inputs);
  const std::string what = "layer '" + name() + "' MAC count";
  int64_t m = numel_of(os);
  for (int64_t f : {spec_.in_channels / spec_.groups, spec_.kernel_h, spec_.kernel_w}) m = checked_mul(m, f, what);
  return m;
}

std::string Conv2d::summary() const {
  std::ostringstream os;
  os << spec_.in_channels << "->" << spec_.out_channels << " k" << spec_.kernel_h << "x" << spec_.kernel_w << " s"
     << spec_.stride_h << " p" << spec_.pad_h;
  if (spec_.groups != 1) os << " g" << spec_.groups;
  if (bias_.empty()) os << " no-bias";
  return os.str();
}

LayerRecord Conv2d::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.tensors["weight"] = weight_;
  if (!bias_.empty()) r.tensors["bias"] = bias_;
  r.numbers = {{"in_channels", double(spec_.in_channels)}, {"out_channels", double(spec_.out_channels)},
               {"kernel_h", double(spec_.kernel_h)},       {"kernel_w", double(spec_.kernel_w)},
               {"stride_h", double(spec_.stride_h)},       {"stride_w", double(spec_.stride_w)},
               {"pad_h", double(spec_.pad_h)},             {"pad_w", double(spec_.pad_w)},
               {"groups", double(spec_.groups)}};
  return r;
}

std::unique_ptr<Layer> Conv2d::from_record(const LayerRecord& r) {
  Conv2dSpec s;
  s.in_channels = r.count("in_channels");
  s.out_channels = r.count("out_channels");
  s.kernel_h = r.count("kernel_h");
  s.kernel_w = r.count("kernel_w");
  s.stride_h = r.count("stride_h");
  s.stride_w = r.count("stride_w");
  s.pad_h = r.count("pad_h");
  s.pad_w = r.count("pad_w");
  s.groups = r.count("groups");
  auto it = r.tensors.find("bias");
  return std::make_unique<Conv2d>(r.name, s, r.tensor("weight"), it == r.tensors.end() ? Tensor() : it->second);
}

namespace {
const bool registered_conv2d = register_layer_type("conv2d", Conv2d::from_record);
}  // namespace

}  // namespace snn
