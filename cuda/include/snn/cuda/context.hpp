// snn::cuda::Context: what the CUDA kernels of one backend share: the cuDNN and cuBLAS handles (made on
// first use, so a Context can exist without a GPU) and grow-only scratch memory. Everything runs on the
// legacy default stream, in order, so kernels and library calls never race and host copies need no
// extra synchronisation. One Context serves one thread at a time.
//
// Numerics: neither library may use TF32 or other reduced-precision paths (the CPU backend is the
// reference, logits must agree within 1e-4): cuBLAS runs in its default FP32 math mode, cuDNN
// convolutions in CUDNN_FMA_MATH (see kernels/conv2d_kernel.cpp).
#pragma once
#include <cstddef>
#include <memory>

#include "snn/cuda/device_buffer.hpp"

struct cudnnContext;   // cudnnHandle_t is cudnnContext*
struct cublasContext;  // cublasHandle_t is cublasContext*

namespace snn::cuda {

class Context {
 public:
  Context() = default;
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudnnContext* cudnn();
  cublasContext* cublas();

  // Scratch for library workspaces (cuDNN). Valid until the next call with a larger size.
  void* workspace(size_t bytes);
  // Scratch for small reduction results (per-channel sums, counts). Same rule.
  void* reduction(size_t bytes);

 private:
  cudnnContext* cudnn_ = nullptr;
  cublasContext* cublas_ = nullptr;
  DeviceBuffer<unsigned char> workspace_, reduction_;
};

}  // namespace snn::cuda
