// Linear: fully connected layer, out = in · Wᵀ + b, weight [out_features, in_features].
#pragma once
#include "snn/layer.hpp"

namespace snn {

class Linear : public Layer {
 public:
  Linear(std::string name, Tensor weight, Tensor bias = Tensor());

  std::string type() const override { return "linear"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  int64_t macs(const std::vector<Shape>& inputs) const override;
  int64_t parameter_count() const override { return weight_.numel() + bias_.numel(); }
  std::string summary() const override;
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Linear>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);

  int64_t in_features() const { return weight_.dim(1); }
  int64_t out_features() const { return weight_.dim(0); }
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }

 private:
  Tensor weight_, bias_;
};

}  // namespace snn
