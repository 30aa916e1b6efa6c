// The two shape-only layers: Flatten and Add.
#include <algorithm>

#include "snn/error.hpp"
#include "snn/layers/add.hpp"
#include "snn/layers/flatten.hpp"

namespace snn {

Shape Flatten::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1) fail("expects one input");
  return {numel_of(inputs[0])};
}

void Flatten::forward(const std::vector<const Tensor*>& inputs, Tensor& out) const {
  const Tensor& x = *inputs[0];
  out = x;
  out.reshape({x.dim(0), x.dim(0) ? x.numel() / x.dim(0) : 0});
}

LayerRecord Flatten::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  return r;
}

std::unique_ptr<Layer> Flatten::from_record(const LayerRecord& r) { return std::make_unique<Flatten>(r.name); }

Shape Add::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 2) fail("expects two inputs");
  if (inputs[0] != inputs[1]) fail("input shapes differ: " + to_string(inputs[0]) + " and " + to_string(inputs[1]));
  return inputs[0];
}

void Add::forward(const std::vector<const Tensor*>& inputs, Tensor& out) const {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  if (a.shape() != b.shape()) fail("input shapes differ: " + to_string(a.shape()) + " and " + to_string(b.shape()));
  out.resize(a.shape());
  const int64_t n = a.numel();
  const float* pa = a.data();
  const float* pb = b.data();
  float* po = out.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
}

LayerRecord Add::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  return r;
}

std::unique_ptr<Layer> Add::from_record(const LayerRecord& r) { return std::make_unique<Add>(r.name); }

}  // namespace snn
