// CUDA kernel of Conv2d: cuDNN forward convolution (NCHW float32, groups, stride, zero padding), then the
// bias in a separate pass (the CPU's order: the sum of products first, then + bias).
//
// Numerics: the descriptor's math type is CUDNN_FMA_MATH (no TF32 tensor cores), and only the GEMM
// family of algorithms is allowed (implicit GEMM, precomputed implicit GEMM, explicit GEMM): they are
// plain sums of products, so they differ from the CPU's GEMM only by summation order (exactly equal when
// the sums are exact), where FFT and Winograd transforms would add their own rounding. The algorithm is
// chosen once per batch size by cuDNN's heuristics (deterministic, unlike timing-based search), and its
// workspace comes from the backend's shared scratch.
#include <cudnn.h>

#include <limits>
#include <map>

#include "library_check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/cuda/ops.hpp"
#include "snn/error.hpp"
#include "snn/layers/conv2d.hpp"

namespace snn::cuda {
namespace {

// Largest workspace an algorithm may ask for (explicit GEMM's im2col buffer can be huge).
constexpr size_t kMaxWorkspace = size_t(1) << 30;

// Owns one cuDNN descriptor (destroyed even when the kernel's constructor throws half-way).
template <class T, cudnnStatus_t (*Destroy)(T)>
struct Descriptor {
  T h = nullptr;
  Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (h) Destroy(h);
  }
};

bool allowed(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
}

class Conv2dKernel : public Kernel {
 public:
  Conv2dKernel(const Conv2d& layer, const Shape& input, Context& ctx)
      : layer_(layer), ctx_(ctx), where_(where(layer)), in_(input), out_(layer.output_shape({input})) {
    const Conv2dSpec& s = layer.spec();
    require(in_.size() == 3 && in_[0] == s.in_channels, where_ + ": input " + to_string(in_) + " does not fit");
    weight_.upload(layer.weight().data(), size_t(layer.weight().numel()));
    if (!layer.bias().empty()) bias_.upload(layer.bias().data(), size_t(layer.bias().numel()));
    SNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_.h), where_);
    SNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_.h), where_);
    SNN_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_.h), where_);
    SNN_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_.h), where_);
    SNN_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_.h, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, int(s.out_channels),
                                               int(s.in_channels / s.groups), int(s.kernel_h), int(s.kernel_w)),
                    where_);
    SNN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_.h, int(s.pad_h), int(s.pad_w), int(s.stride_h),
                                                    int(s.stride_w), 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                    where_);
    SNN_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_.h, int(s.groups)), where_);
    SNN_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_.h, CUDNN_FMA_MATH), where_);
  }

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& x = *inputs.at(0);
    const int64_t in_per = numel_of(in_), out_per = numel_of(out_);
    require(x.rank() == 4 && x.numel() == x.dim(0) * in_per,
            where_ + ": input " + to_string(x.shape()) + " does not fit " + to_string(in_));
    const int64_t n = x.dim(0);
    out.resize({n, out_[0], out_[1], out_[2]});
    if (n == 0) return;
    // cuDNN takes int sizes: split the batch so no call holds 2^31 or more elements.
    const int64_t limit = std::numeric_limits<int>::max();
    const int64_t piece = std::max<int64_t>(1, std::min(n, limit / std::max(in_per, out_per)));
    for (int64_t i0 = 0; i0 < n; i0 += piece) {
      const int64_t m = std::min(piece, n - i0);
      run(x.data() + i0 * in_per, out.data() + i0 * out_per, m);
    }
    if (!bias_.empty()) add_channel_bias(out.data(), bias_.data(), n, out_[0], out_[1] * out_[2], where_);
  }

 private:
  struct Algo {
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace;
  };

  void run(const float* x, float* y, int64_t n) {
    SNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_.h, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(n), int(in_[0]),
                                               int(in_[1]), int(in_[2])),
                    where_);
    SNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_.h, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(n), int(out_[0]),
                                               int(out_[1]), int(out_[2])),
                    where_);
    const Algo a = algorithm(n);
    void* ws = a.workspace ? ctx_.workspace(a.workspace) : nullptr;
    const float one = 1.0f, zero = 0.0f;
    SNN_CUDNN_CHECK(cudnnConvolutionForward(ctx_.cudnn(), &one, x_.h, x, w_.h, weight_.data(), conv_.h, a.algo, ws,
                                            a.workspace, &zero, y_.h, y),
                    where_);
  }

  // The algorithm for batch n (descriptors already set for n): chosen once, then cached.
  Algo algorithm(int64_t n) {
    auto it = algos_.find(n);
    if (it != algos_.end()) return it->second;
    int on = 0, oc = 0, oh = 0, ow = 0;
    SNN_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_.h, x_.h, w_.h, &on, &oc, &oh, &ow), where_);
    require(on == n && oc == out_[0] && oh == out_[1] && ow == out_[2],
            where_ + ": cuDNN's output shape [" + std::to_string(oc) + ", " + std::to_string(oh) + ", " +
                std::to_string(ow) + "] differs from the layer's " + to_string(out_));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    SNN_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx_.cudnn(), x_.h, w_.h, conv_.h, y_.h,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
                    where_);
    Algo chosen{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 0};
    bool found = false;
    for (int k = 0; k < returned && !found; ++k) {
      const auto& p = perf[k];
      if (p.status != CUDNN_STATUS_SUCCESS || !allowed(p.algo) || p.determinism != CUDNN_DETERMINISTIC) continue;
      if (p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) continue;
      size_t ws = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(ctx_.cudnn(), x_.h, w_.h, conv_.h, y_.h, p.algo, &ws) !=
              CUDNN_STATUS_SUCCESS ||
          ws > kMaxWorkspace)
        continue;
      chosen = {p.algo, ws};
      found = true;
    }
    if (!found)  // implicit GEMM supports every configuration and needs no workspace
      SNN_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(ctx_.cudnn(), x_.h, w_.h, conv_.h, y_.h, chosen.algo,
                                                              &chosen.workspace),
                      where_);
    // The heuristics may have reported another math type; the call must still run FMA-only.
    SNN_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_.h, CUDNN_FMA_MATH), where_);
    algos_[n] = chosen;
    return chosen;
  }

  const Conv2d& layer_;
  Context& ctx_;
  std::string where_;
  Shape in_, out_;
  DeviceBuffer<float> weight_, bias_;
  Descriptor<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> x_, y_;
  Descriptor<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor> w_;
  Descriptor<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor> conv_;
  std::map<int64_t, Algo> algos_;
};

const bool registered = kernels().add("conv2d", [](const Layer& l, const std::vector<Shape>& in, Context& ctx) {
  return std::make_unique<Conv2dKernel>(static_cast<const Conv2d&>(l), in.at(0), ctx);
});

}  // namespace
}  // namespace snn::cuda
