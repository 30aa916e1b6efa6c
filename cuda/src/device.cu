#include <cuda_runtime.h>

#include "snn/cuda/device.hpp"
#include "snn/error.hpp"

namespace snn::cuda {

namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}
}  // namespace

bool device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

std::string device_name() {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  return p.name;
}

DeviceBuffer::DeviceBuffer(size_t count) : count_(count) {
  if (count) check(cudaMalloc(&ptr_, count * sizeof(float)), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) {
  o.ptr_ = nullptr;
  o.count_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    count_ = o.count_;
    o.ptr_ = nullptr;
    o.count_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const float* host, size_t count) {
  if (count > count_) throw Error("DeviceBuffer::upload: " + std::to_string(count) + " > " + std::to_string(count_));
  check(cudaMemcpy(ptr_, host, count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void DeviceBuffer::download(float* host, size_t count) const {
  if (count > count_) throw Error("DeviceBuffer::download: " + std::to_string(count) + " > " + std::to_string(count_));
  check(cudaMemcpy(host, ptr_, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

DeviceBuffer DeviceBuffer::from(const std::vector<float>& host) {
  DeviceBuffer b(host.size());
  b.upload(host.data(), host.size());
  return b;
}

std::vector<float> DeviceBuffer::to_host() const {
  std::vector<float> h(count_);
  download(h.data(), count_);
  return h;
}

void synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

}  // namespace snn::cuda
