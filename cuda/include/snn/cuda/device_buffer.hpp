// DeviceBuffer<T>: an owning, move-only array in device memory that grows and never shrinks, so a
// buffer reused across chunks and calls is allocated once (cudaMalloc/cudaFree synchronise the device).
#pragma once
#include <cstddef>
#include <vector>

#include "snn/cuda/device.hpp"

namespace snn::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) { resize(count); }
  explicit DeviceBuffer(const std::vector<T>& host) { upload(host); }
  ~DeviceBuffer() { device_free(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_), capacity_(o.capacity_) {
    o.ptr_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      device_free(ptr_);
      ptr_ = o.ptr_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      o.ptr_ = nullptr;
      o.size_ = o.capacity_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Contents are unspecified after growing.
  void resize(size_t count) {
    if (count > capacity_) {
      device_free(ptr_);
      ptr_ = nullptr;
      capacity_ = 0;
      ptr_ = static_cast<T*>(device_alloc(count * sizeof(T)));
      capacity_ = count;
    }
    size_ = count;
  }
  void release() {
    device_free(ptr_);
    ptr_ = nullptr;
    size_ = capacity_ = 0;
  }
  void zero() {
    if (size_) zero_device(ptr_, size_ * sizeof(T));
  }
  void upload(const T* host, size_t count) {
    resize(count);
    if (count) copy_to_device(ptr_, host, count * sizeof(T));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  void download(T* host, size_t count) const {
    if (count) copy_to_host(host, ptr_, count * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> h(size_);
    download(h.data(), size_);
    return h;
  }

 private:
  T* ptr_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace snn::cuda
