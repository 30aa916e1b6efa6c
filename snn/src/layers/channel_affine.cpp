#include "snn/layers/channel_affine.hpp"

#include <cmath>

#include "snn/error.hpp"

namespace snn {

ChannelAffine::ChannelAffine(std::string name, Tensor scale, Tensor shift)
    : Layer(std::move(name)), scale_(std::move(scale)), shift_(std::move(shift)) {
  if (scale_.rank() != 1 || scale_.numel() == 0)
    fail("scale must be [C] with C >= 1, got " + to_string(scale_.shape()));
  if (shift_.shape() != scale_.shape())
    fail("shift shape " + to_string(shift_.shape()) + " differs from scale shape " + to_string(scale_.shape()));
  for (int64_t c = 0; c < scale_.numel(); ++c)
    if (!std::isfinite(scale_[c]) || !std::isfinite(shift_[c]))
      fail("channel " + std::to_string(c) + " has a non-finite scale or shift");
}

ChannelAffine ChannelAffine::from_batch_norm(std::string name, const std::vector<float>& mean,
                                             const std::vector<float>& var, const std::vector<float>& gamma,
                                             const std::vector<float>& beta, double eps) {
  const size_t C = mean.size();
  auto where = [&] { return "layer '" + name + "' (channel_affine): "; };
  require(C > 0, where() + "batch norm with no channels");
  require(var.size() == C && (gamma.empty() || gamma.size() == C) && (beta.empty() || beta.size() == C),
          where() + "batch-norm statistics of different lengths");
  Tensor scale({int64_t(C)}), shift({int64_t(C)});
  for (size_t c = 0; c < C; ++c) {
    const double v = double(var[c]) + eps;
    require(v > 0.0, where() + "channel " + std::to_string(c) + ": var + eps must be positive");
    const double s = (gamma.empty() ? 1.0 : double(gamma[c])) / std::sqrt(v);
    scale[int64_t(c)] = float(s);
    shift[int64_t(c)] = float((beta.empty() ? 0.0 : double(beta[c])) - double(mean[c]) * s);
  }
  return ChannelAffine(std::move(name), std::move(scale), std::move(shift));
}

Shape ChannelAffine::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1) fail("expects one input");
  const Shape& in = inputs[0];
  if (in.size() != 1 && in.size() != 3) fail("expects [C, H, W] or [C], got " + to_string(in));
  if (in[0] != channels())
    fail("input " + to_string(in) + " has " + std::to_string(in[0]) + " channels, layer has " +
         std::to_string(channels()));
  return in;
}

int64_t ChannelAffine::macs(const std::vector<Shape>& inputs) const {
  return inputs.size() == 1 ? numel_of(inputs[0]) : 0;
}

std::string ChannelAffine::summary() const { return std::to_string(channels()) + " channels: x*scale + shift"; }

LayerRecord ChannelAffine::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.tensors["scale"] = scale_;
  r.tensors["shift"] = shift_;
  return r;
}

std::unique_ptr<Layer> ChannelAffine::from_record(const LayerRecord& r) {
  return std::make_unique<ChannelAffine>(r.name, r.tensor("scale"), r.tensor("shift"));
}

namespace {
const bool registered_channel_affine = register_layer_type("channel_affine", ChannelAffine::from_record);
}  // namespace

}  // namespace snn
