#include "snn/cuda/device_tensor.hpp"

#include "snn/error.hpp"

namespace snn::cuda {

DeviceTensor DeviceTensor::from_host(const Tensor& t) {
  DeviceTensor d;
  d.upload(t);
  return d;
}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& o) noexcept {
  if (this != &o) {
    shape_ = std::move(o.shape_);
    numel_ = o.numel_;
    storage_ = std::move(o.storage_);
    alias_ = o.alias_;
    o.shape_.clear();
    o.numel_ = 0;
    o.alias_ = nullptr;
  }
  return *this;
}

int64_t DeviceTensor::dim(int i) const {
  const int r = rank();
  const int k = i < 0 ? r + i : i;
  require(k >= 0 && k < r, "DeviceTensor::dim(" + std::to_string(i) + ") of a tensor of shape " + to_string(shape_));
  return shape_[size_t(k)];
}

void DeviceTensor::resize(Shape shape) {
  const int64_t n = numel_of(shape);
  require(n >= 0, "DeviceTensor: negative shape " + to_string(shape));
  alias_ = nullptr;
  storage_.resize(size_t(n));
  shape_ = std::move(shape);
  numel_ = n;
}

void DeviceTensor::reshape(Shape shape) {
  require(numel_of(shape) == numel_, "DeviceTensor: cannot reshape " + to_string(shape_) + " to " + to_string(shape));
  shape_ = std::move(shape);
}

void DeviceTensor::alias(const DeviceTensor& other, Shape shape) {
  require(numel_of(shape) == other.numel(),
          "DeviceTensor: an alias of " + to_string(other.shape()) + " cannot have shape " + to_string(shape));
  // The view is writable like any output buffer; readers downstream only read it.
  alias_ = const_cast<float*>(other.data());
  shape_ = std::move(shape);
  numel_ = other.numel();
}

void DeviceTensor::fill_zero() {
  if (numel_) zero_device(data(), size_t(numel_) * sizeof(float));
}

void DeviceTensor::upload(const Tensor& host) {
  resize(host.shape());
  if (numel_) copy_to_device(data(), host.data(), size_t(numel_) * sizeof(float));
}

Tensor DeviceTensor::to_host() const {
  Tensor t(shape_);
  if (numel_) copy_to_host(t.data(), data(), size_t(numel_) * sizeof(float));
  return t;
}

void DeviceTensor::copy_from(const DeviceTensor& other) {
  require(&other != this, "DeviceTensor::copy_from itself");
  resize(other.shape());
  if (numel_) copy_on_device(data(), other.data(), size_t(numel_) * sizeof(float));
}

}  // namespace snn::cuda
