// Add: elementwise sum of two inputs of equal shape (residual connections).
#pragma once
#include "snn/layer.hpp"

namespace snn {

class Add : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "add"; }
  int arity() const override { return 2; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  bool preserves_events() const override { return true; }
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Add>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);
};

}  // namespace snn
