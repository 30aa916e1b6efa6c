// CPU kernel of Add (residual connections): elementwise sum, the same in both views.
#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"

namespace snn::cpu {
namespace {

class AddKernel : public Kernel {
 public:
  explicit AddKernel(const Layer& layer) : layer_(layer) {}

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    require(a.shape() == b.shape(), "layer '" + layer_.name() + "' (add): input shapes differ: " +
                                        to_string(a.shape()) + " and " + to_string(b.shape()));
    out.resize(a.shape());
    const int64_t n = a.numel();
    const float* pa = a.data();
    const float* pb = b.data();
    float* po = out.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
  }

 private:
  const Layer& layer_;
};

const bool registered =
    kernels().add("add", [](const Layer& l, const std::vector<Shape>&) { return std::make_unique<AddKernel>(l); });

}  // namespace
}  // namespace snn::cpu
