// UpsampleNearest: nearest-neighbour resampling of [C, H, W] to [C, out_h, out_w], exactly as PyTorch's
// upsample_nearest2d (and nearest-exact): output row y reads input row
//   nearest:       min(floor(float(y) · scale_h), H − 1), but y when out_h = H and y / 2 when out_h = 2·H
//                  (PyTorch's nearest_idx shortcuts, taken by torch 2.x whatever the scale factor)
//   nearest-exact: min(floor((float(y) + 0.5f) · scale_h), H − 1)
// in float arithmetic, where scale_h = 1 / scale_factor when the model gave a scale factor, else H / out_h
// (likewise for columns). The layer computes these index tables once; kernels only copy.
//
// SNN view: it only replicates values, so spikes stay spikes (preserves_events) and it is stateless.
#pragma once
#include "snn/layer.hpp"

namespace snn {

struct UpsampleSpec {
  int64_t out_h = 0, out_w = 0;
  float scale_h = 0.0f, scale_w = 0.0f;  // input pixels per output pixel (see above); > 0
  bool exact = false;                    // nearest-exact (half-pixel centres)
};

class UpsampleNearest : public Layer {
 public:
  UpsampleNearest(std::string name, UpsampleSpec spec);

  std::string type() const override { return "upsample_nearest"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  bool preserves_events() const override { return true; }
  std::string summary() const override;
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<UpsampleNearest>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);

  const UpsampleSpec& spec() const { return spec_; }
  // The input row of each output row (out_h values) for an input of `in_h` rows; likewise columns.
  std::vector<int64_t> source_rows(int64_t in_h) const;
  std::vector<int64_t> source_cols(int64_t in_w) const;

 private:
  UpsampleSpec spec_;
};

}  // namespace snn
