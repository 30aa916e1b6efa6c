// Pooling layers over [C, H, W] inputs, with PyTorch's rules: zero/−∞ padding, floor or ceil output
// size (ceil_mode), average pooling dividing by the padded window (count_include_pad, the default) or by
// its in-bounds part; and adaptive average pooling to a given output size, windows of uneven size
// included (snn/pool_window.hpp has the window rule every backend uses).
//
// AvgPool2d is linear, so spikes average exactly as rates do. MaxPool2d is not: the max of spike trains
// is not the spike train of the max rate (it fires whenever *any* input fires). In the SNN view
// MaxPool2d keeps a running sum of every input and emits, at each step, the increase of the largest
// running sum in its window. So the output's running sum is exactly the max of the inputs' running
// sums at every step (rate = max rate), and with spike inputs the output is a spike train: the largest
// count grows by at most one spike per step. Unlike gating by the current leader, ties between
// equally-counted inputs cannot add surplus spikes.
#pragma once
#include "snn/layer.hpp"
#include "snn/pool_window.hpp"

namespace snn {

struct PoolSpec {
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  int64_t pad_h = 0, pad_w = 0;
  bool ceil_mode = false;          // output size rounded up (a last, partial window), as PyTorch
  bool count_include_pad = true;   // average pooling: padding counts in the divisor (PyTorch's default)
};

class PoolLayer : public Layer {
 public:
  PoolLayer(std::string name, PoolSpec spec);
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  bool preserves_events() const override { return true; }
  std::string summary() const override;
  LayerRecord to_record() const override;
  const PoolSpec& spec() const { return spec_; }
  // The window rule on an input plane of h×w (for kernels).
  PoolGeometry geometry(int64_t h, int64_t w) const;

 protected:
  static PoolSpec spec_from_record(const LayerRecord& r);
  PoolSpec spec_;
};

class AvgPool2d : public PoolLayer {
 public:
  // count_include_pad as in PyTorch's default (padding zeros count in the divisor).
  using PoolLayer::PoolLayer;
  std::string type() const override { return "avgpool2d"; }
  std::unique_ptr<Layer> clone() const override { return std::make_unique<AvgPool2d>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);
};

// Adaptive average pooling to out_h × out_w (torch.nn.AdaptiveAvgPool2d), for any input size: windows
// [floor(o·in/out), ceil((o+1)·in/out)) may be uneven or overlap, and are replicated when out > in. The
// importer uses AvgPool2d where the windows are even; this layer covers the rest. Linear: in the SNN
// view spikes average exactly as rates do.
class AdaptiveAvgPool2d : public Layer {
 public:
  AdaptiveAvgPool2d(std::string name, int64_t out_h, int64_t out_w);
  std::string type() const override { return "adaptive_avgpool2d"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  bool preserves_events() const override { return true; }
  std::string summary() const override;
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<AdaptiveAvgPool2d>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);
  int64_t out_h() const { return out_h_; }
  int64_t out_w() const { return out_w_; }
  PoolGeometry geometry(int64_t h, int64_t w) const;

 private:
  int64_t out_h_, out_w_;
};

class MaxPool2d : public PoolLayer {
 public:
  using PoolLayer::PoolLayer;
  std::string type() const override { return "maxpool2d"; }
  bool stateful() const override { return true; }
  std::string summary() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<MaxPool2d>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);
};

}  // namespace snn
