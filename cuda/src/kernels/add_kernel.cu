// CUDA kernel of Add (residual connections): elementwise sum, the same in both views.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/error.hpp"

namespace snn::cuda {
namespace {

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                           int64_t n) {
  SNN_GRID_LOOP(i, n) out[i] = a[i] + b[i];
}

class AddKernel : public Kernel {
 public:
  explicit AddKernel(const Layer& layer) : where_(where(layer)) {}

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& a = *inputs.at(0);
    const DeviceTensor& b = *inputs.at(1);
    require(a.shape() == b.shape(),
            where_ + ": input shapes differ: " + to_string(a.shape()) + " and " + to_string(b.shape()));
    out.resize(a.shape());
    if (a.numel() == 0) return;
    add_kernel<<<blocks_for(a.numel()), kThreads>>>(a.data(), b.data(), out.data(), a.numel());
    check_launch("add_kernel", where_);
  }

 private:
  std::string where_;
};

const bool registered = kernels().add(
    "add", [](const Layer& l, const std::vector<Shape>&, Context&) { return std::make_unique<AddKernel>(l); });

}  // namespace
}  // namespace snn::cuda
