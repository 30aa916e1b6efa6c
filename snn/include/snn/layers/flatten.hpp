// Flatten: [C, H, W] -> [C·H·W].
#pragma once
#include "snn/layer.hpp"

namespace snn {

class Flatten : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "flatten"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  bool preserves_events() const override { return true; }
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<Flatten>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);
};

}  // namespace snn
