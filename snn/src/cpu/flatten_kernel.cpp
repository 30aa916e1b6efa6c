// CPU kernel of Flatten: [N, C, H, W] -> [N, C·H·W]. The data is contiguous, so only the shape changes.
#include "snn/cpu/kernel.hpp"

namespace snn::cpu {
namespace {

class FlattenKernel : public Kernel {
 public:
  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    out = x;
    out.reshape({x.dim(0), x.dim(0) ? x.numel() / x.dim(0) : 0});
  }
};

const bool registered =
    kernels().add("flatten", [](const Layer&, const std::vector<Shape>&) { return std::make_unique<FlattenKernel>(); });

}  // namespace
}  // namespace snn::cpu
