// Device discovery, raw device memory and the CUDA status checks.
#include "snn/cuda/device.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "snn/cuda/check.hpp"
#include "snn/error.hpp"

namespace snn::cuda {

bool sync_each_launch() {
  static const bool on = [] {
    const char* v = std::getenv("SNN_CUDA_SYNC");
    return v != nullptr && std::strcmp(v, "0") != 0 && *v != '\0';
  }();
  return on;
}

void check_cuda(int status, const char* call, const std::string& where) {
  if (status == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(status);
  throw Error(where + ": " + call + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void check_launch(const char* kernel, const std::string& where) {
  check_cuda(cudaGetLastError(), (std::string("launching ") + kernel).c_str(), where);
  if (sync_each_launch()) check_cuda(cudaDeviceSynchronize(), (std::string("running ") + kernel).c_str(), where);
}

bool device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why)
      *why = e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  return true;
}

void select_device(int ordinal) {
  int n = 0;
  SNN_CUDA_CHECK(cudaGetDeviceCount(&n), "cuda backend");
  SNN_CUDA_CHECK(cudaSetDevice(n > 0 ? ordinal % n : 0), "cuda backend");
}

std::string device_name() {
  int dev = 0;
  SNN_CUDA_CHECK(cudaGetDevice(&dev), "cuda backend");
  cudaDeviceProp p{};
  SNN_CUDA_CHECK(cudaGetDeviceProperties(&p, dev), "cuda backend");
  return p.name;
}

void synchronize(const std::string& where) { SNN_CUDA_CHECK(cudaDeviceSynchronize(), where); }

void* device_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw Error("cuda backend: cudaMalloc of " + std::to_string(bytes >> 20) + " MiB failed: " + cudaGetErrorName(e) +
                " (" + std::to_string(free_b >> 20) + " of " + std::to_string(total_b >> 20) +
                " MiB free; a smaller batch or SimulationOptions::memory_budget needs less)");
  }
  return p;
}

void device_free(void* p) noexcept {
  if (p) cudaFree(p);  // errors at process exit (driver shut down) are of no use to anyone
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  SNN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cuda backend (upload)");
}
void copy_to_host(void* dst, const void* src, size_t bytes) {
  SNN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cuda backend (download)");
}
void copy_on_device(void* dst, const void* src, size_t bytes) {
  SNN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cuda backend (device copy)");
}
void zero_device(void* p, size_t bytes) { SNN_CUDA_CHECK(cudaMemset(p, 0, bytes), "cuda backend"); }

}  // namespace snn::cuda
