// CPU kernel of Linear: one GEMM (Eigen) over the whole batch (all timesteps of a chunk at once).
#include <Eigen/Core>

#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/linear.hpp"

namespace snn::cpu {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

class LinearKernel : public Kernel {
 public:
  explicit LinearKernel(const Linear& layer) : layer_(layer) {}

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    const int64_t n = x.dim(0);
    if (x.numel() != n * layer_.in_features()) throw Error("layer '" + layer_.name() + "' (linear): input " + to_string(x.shape()) + " does not match in_features");
    out.resize({n, layer_.out_features()});
    Eigen::Map<const RowMatrix> xm(x.data(), n, layer_.in_features());
    Eigen::Map<const RowMatrix> wm(layer_.weight().data(), layer_.out_features(), layer_.in_features());
    Eigen::Map<RowMatrix> om(out.data(), n, layer_.out_features());
    om.noalias() = xm * wm.transpose();
    if (!layer_.bias().empty()) om.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(layer_.bias().data(), layer_.out_features());
  }
 private:
  const Linear& layer_;
};

const bool registered = kernels().add("linear", [](const Layer& l, const std::vector<Shape>&) {
  return std::make_unique<LinearKernel>(static_cast<const Linear&>(l));
});

}  // namespace
}  // namespace snn::cpu
