// Status checks for cuDNN and cuBLAS calls (private to the CUDA backend): a failure throws snn::Error
// naming the culprit, the call and the library's own message.
#pragma once
#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

namespace snn::cuda {

void check_cudnn(cudnnStatus_t status, const char* call, const std::string& where);
void check_cublas(cublasStatus_t status, const char* call, const std::string& where);

}  // namespace snn::cuda

#define SNN_CUDNN_CHECK(call, where) ::snn::cuda::check_cudnn((call), #call, (where))
#define SNN_CUBLAS_CHECK(call, where) ::snn::cuda::check_cublas((call), #call, (where))
