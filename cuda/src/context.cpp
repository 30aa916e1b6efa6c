// The shared handles and scratch of one CUDA backend, and the cuDNN/cuBLAS status checks.
#include "snn/cuda/context.hpp"

#include "library_check.hpp"
#include "snn/error.hpp"

namespace snn::cuda {

void check_cudnn(cudnnStatus_t status, const char* call, const std::string& where) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw Error(where + ": " + call + " failed: " + cudnnGetErrorString(status) + " (cuDNN status " +
              std::to_string(int(status)) + ")");
}

namespace {
const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "unknown cuBLAS status";
  }
}
}  // namespace

void check_cublas(cublasStatus_t status, const char* call, const std::string& where) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(where + ": " + call + " failed: " + cublas_status_name(status) + " (cuBLAS status " +
              std::to_string(int(status)) + ")");
}

Context::~Context() {
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublas_) cublasDestroy(cublas_);
}

cudnnContext* Context::cudnn() {
  if (!cudnn_) {
    cudnnHandle_t h = nullptr;
    SNN_CUDNN_CHECK(cudnnCreate(&h), "cuda backend (cuDNN)");
    cudnn_ = h;  // default stream; the math type is set per convolution descriptor (FMA, no TF32)
  }
  return cudnn_;
}

cublasContext* Context::cublas() {
  if (!cublas_) {
    cublasHandle_t h = nullptr;
    SNN_CUBLAS_CHECK(cublasCreate(&h), "cuda backend (cuBLAS)");
    cublas_ = h;
    // Plain FP32 (no TF32 tensor-op down-conversion): logits must match the CPU within 1e-4.
    SNN_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cuda backend (cuBLAS)");
    SNN_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), "cuda backend (cuBLAS)");
  }
  return cublas_;
}

void* Context::workspace(size_t bytes) {
  workspace_.resize(bytes);
  return workspace_.data();
}

void* Context::reduction(size_t bytes) {
  reduction_.resize(bytes);
  return reduction_.data();
}

}  // namespace snn::cuda
