// Conv2d: 2-D convolution (stride, zero padding, groups, optional bias), NCHW, weight [O, I/groups, kh, kw].
#pragma once
#include "snn/layer.hpp"

namespace snn {

struct Conv2dSpec {
  int64_t in_channels = 0, out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t groups = 1;
};

class Conv2d : public Layer {
 public:
  // weight [O, I/groups, kh, kw]; bias [O] or empty for none.
  Conv2d(std::string name, Conv2dSpec spec, Tensor weight, Tensor bias = Tensor());

  std::string type() const override { return "conv2d"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  int64_t macs(const std::vector<Shape>& inputs) const override;
  int64_t parameter_count() const override { return weight_.numel() + bias_.numel(); }
  std::string summary() const override;
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Conv2d>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);

  const Conv2dSpec& spec() const { return spec_; }
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }  // empty when the layer has no bias

 private:
  Conv2dSpec spec_;
  Tensor weight_, bias_;
};

}  // namespace snn
