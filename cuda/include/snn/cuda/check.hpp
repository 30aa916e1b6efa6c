// Status checks for CUDA runtime calls and kernel launches. A failure becomes an snn::Error that names
// the culprit (layer and backend, or the engine step), the call that failed and CUDA's own message.
//
// Kernel launches are asynchronous, so an error inside a kernel surfaces at the next synchronising call.
// With the environment variable SNN_CUDA_SYNC=1 every checked launch also synchronises, so the error
// names the kernel and layer that caused it (debugging; the tests set it).
#pragma once
#include <string>

namespace snn::cuda {

// Throws Error("<where>: <call> failed: <cudaErrorName>: <message>") unless status == cudaSuccess.
// `status` is a cudaError_t (taken as int so this header needs no CUDA headers).
void check_cuda(int status, const char* call, const std::string& where);

// After a kernel launch: reports launch errors (and, with SNN_CUDA_SYNC=1, execution errors).
void check_launch(const char* kernel, const std::string& where);

// Whether SNN_CUDA_SYNC=1 was set when the process first asked.
bool sync_each_launch();

}  // namespace snn::cuda

#define SNN_CUDA_CHECK(call, where) ::snn::cuda::check_cuda(static_cast<int>(call), #call, (where))
