// CPU kernel of Linear: one GEMM (Eigen) over the whole batch (all timesteps of a chunk at once), or in
// the SNN view on sparse inputs the event-driven path (event_linear.hpp), chosen per chunk from the
// input's density (event_path.hpp).
#include <Eigen/Core>
#include <memory>

#include "snn/cpu/event_linear.hpp"
#include "snn/cpu/event_path.hpp"

#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/linear.hpp"

namespace snn::cpu {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

class LinearKernel : public EventWeightKernel {
 public:
  explicit LinearKernel(const Linear& layer) : layer_(layer) {
    ConvGeometry g;
    g.in_channels = layer.in_features();
    g.out_channels = layer.out_features();
    if (!event_path_fits(g)) return;
    events_ = std::make_unique<EventLinear>(g.in_channels, g.out_channels, layer.weight().data(),
                                            layer.bias().empty() ? nullptr : layer.bias().data());
    enable_events(g);  // as a 1×1 convolution of a 1×1 image (event_path.hpp's terms)
  }

  void run_events(const Tensor& x, Tensor& out) override {
    out.resize({x.dim(0), layer_.out_features()});
    events_->run(x.data(), x.dim(0), out.data());
  }

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
  std::unique_ptr<EventLinear> events_;  // null: dense only
};

const bool registered = kernels().add("linear", [](const Layer& l, const std::vector<Shape>&) {
  return std::make_unique<LinearKernel>(static_cast<const Linear&>(l));
});

}  // namespace
}  // namespace snn::cpu
