// Device discovery and a small owning device buffer for the CUDA backend. Errors become snn::Error
// naming the CUDA call and the CUDA error string.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace snn::cuda {

// True when a CUDA device can be used; otherwise false and *why says what is missing.
bool device_available(std::string* why = nullptr);
std::string device_name();

// Float buffer in device memory. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* data() { return ptr_; }
  const float* data() const { return ptr_; }
  size_t size() const { return count_; }
  void upload(const float* host, size_t count);
  void download(float* host, size_t count) const;
  static DeviceBuffer from(const std::vector<float>& host);
  std::vector<float> to_host() const;

 private:
  float* ptr_ = nullptr;
  size_t count_ = 0;
};

void synchronize();

}  // namespace snn::cuda
