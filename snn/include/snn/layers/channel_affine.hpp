// ChannelAffine: y = x · scale[c] + shift[c] per channel, on [C, H, W] or vectors [C]. An eval-mode batch
// norm that cannot be folded into a convolution or linear layer before it (it follows a concatenation,
// pooling, a residual sum or the model input, as in DenseNet's pre-activation blocks).
//
// SNN view: applied to every timestep, so the output's mean over steps is scale·(input rate) + shift, as
// in the ANN; the shift is a constant input current, so the output is not a spike train.
#pragma once
#include "snn/layer.hpp"

namespace snn {

class ChannelAffine : public Layer {
 public:
  // scale and shift: [C] each.
  ChannelAffine(std::string name, Tensor scale, Tensor shift);
  // From batch-norm statistics (computed in double): scale = γ/√(var+eps), shift = β − mean·scale.
  // gamma/beta empty mean 1/0.
  static ChannelAffine from_batch_norm(std::string name, const std::vector<float>& mean, const std::vector<float>& var,
                                       const std::vector<float>& gamma, const std::vector<float>& beta, double eps);

  std::string type() const override { return "channel_affine"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  int64_t macs(const std::vector<Shape>& inputs) const override;  // one multiply-add per element
  int64_t parameter_count() const override { return scale_.numel() + shift_.numel(); }
  std::string summary() const override;
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<ChannelAffine>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);

  int64_t channels() const { return scale_.numel(); }
  const Tensor& scale() const { return scale_; }
  const Tensor& shift() const { return shift_; }

 private:
  Tensor scale_, shift_;
};

}  // namespace snn
