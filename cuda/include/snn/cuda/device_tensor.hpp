// snn::cuda::DeviceTensor: the device twin of snn::Tensor: an explicit shape and float32 data in device
// memory, row-major (NCHW). Move-only. Its storage grows and never shrinks (resize keeps it when it is
// large enough), so per-node buffers are allocated once and reused across chunks and batches.
//
// A tensor may instead be an alias: a view of another tensor's storage with its own shape (Flatten uses
// this to cost nothing). An alias does not own its data; the viewed tensor must keep it alive and not
// reallocate it while the alias is used. Resizing an alias gives it storage of its own.
#pragma once
#include <cstdint>
#include <utility>

#include "snn/cuda/device_buffer.hpp"
#include "snn/tensor.hpp"

namespace snn::cuda {

class DeviceTensor {
 public:
  DeviceTensor() = default;
  explicit DeviceTensor(Shape shape) { resize(std::move(shape)); }
  // A device copy of a host tensor.
  static DeviceTensor from_host(const Tensor& t);

  DeviceTensor(DeviceTensor&& o) noexcept { *this = std::move(o); }
  DeviceTensor& operator=(DeviceTensor&& o) noexcept;  // leaves o empty
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative i counts from the back; throws when out of range
  int64_t numel() const { return numel_; }
  bool empty() const { return numel_ == 0; }
  bool is_alias() const { return alias_ != nullptr; }

  float* data() { return alias_ ? alias_ : storage_.data(); }
  const float* data() const { return alias_ ? alias_ : storage_.data(); }

  // New shape; contents unspecified. Keeps the storage when it is large enough.
  void resize(Shape shape);
  // New shape, same element count, same data.
  void reshape(Shape shape);
  // Views `other`'s data with `shape` (same element count). No copy.
  void alias(const DeviceTensor& other, Shape shape);
  void fill_zero();

  void upload(const Tensor& host);  // resizes to host's shape
  Tensor to_host() const;
  void copy_from(const DeviceTensor& other);  // device-to-device, resizing to other's shape

 private:
  Shape shape_;
  int64_t numel_ = 0;
  DeviceBuffer<float> storage_;
  float* alias_ = nullptr;
};

}  // namespace snn::cuda
