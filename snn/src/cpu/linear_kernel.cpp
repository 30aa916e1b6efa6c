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
using ColMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
// Samples per GEMM: a multiple of every GEMM panel width (so no sample falls in a remainder panel, which
// Eigen computes in another order) and large enough that the weight panel's packing is amortised.
constexpr int64_t kGroup = kLinearGroupSamples;

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

  // outᵀ = W·xᵀ over groups of exactly kGroup samples (the last one padded with zeros), each a
  // single-threaded GEMM of the same shape: a sample's result is the same whatever its batch, its
  // place in it and the thread count (data-parallel runs need that; tests/core/test_batch_independence).
  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    const int64_t n = x.dim(0), in = layer_.in_features(), of = layer_.out_features();
    if (x.numel() != n * in) throw Error("layer '" + layer_.name() + "' (linear): input " + to_string(x.shape()) + " does not match in_features");
    out.resize({n, of});
    Eigen::Map<const RowMatrix> wm(layer_.weight().data(), of, in);
    const int64_t groups = (n + kGroup - 1) / kGroup;
  #pragma omp parallel
    {
      std::vector<float> xs, os;  // the padded last group
  #pragma omp for schedule(static)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t s0 = g * kGroup, ns = std::min(kGroup, n - s0);
        const float* xp = x.data() + s0 * in;
        float* op = out.data() + s0 * of;
        if (ns < kGroup) {
          xs.assign(size_t(kGroup * in), 0.0f);
          std::copy(xp, xp + ns * in, xs.begin());
          os.resize(size_t(kGroup * of));
          xp = xs.data();
        }
        Eigen::Map<const ColMatrix> xt(xp, in, kGroup);
        Eigen::Map<ColMatrix> ot(ns < kGroup ? os.data() : op, of, kGroup);
        ot.noalias() = wm * xt;
        if (ns < kGroup) std::copy(os.begin(), os.begin() + ns * of, op);
        if (!layer_.bias().empty())
          for (int64_t s = 0; s < ns; ++s)
            for (int64_t o = 0; o < of; ++o) op[s * of + o] += layer_.bias()[o];
      }
    }
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
