// CUDA kernel of Linear: one cuBLAS SGEMM over the whole batch (all timesteps of a chunk at once), then
// the bias in a separate pass (the CPU's order). cuBLAS is column-major: a row-major matrix M [r, c] is
// the column-major Mᵀ [c, r], so out [n, O] = x [n, I] · Wᵀ is computed as outᵀ [O, n] = W · xᵀ, i.e.
// gemm(op(A) = Aᵀ with A = W's memory as [I, O], B = x's memory as [I, n], C = out's memory as [O, n]).
// FP32 throughout (the handle's default math mode: no TF32).
#include <cublas_v2.h>

#include <limits>

#include "library_check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/cuda/ops.hpp"
#include "snn/error.hpp"
#include "snn/layers/linear.hpp"

namespace snn::cuda {
namespace {

class LinearKernel : public Kernel {
 public:
  LinearKernel(const Linear& layer, Context& ctx) : layer_(layer), ctx_(ctx), where_(where(layer)) {
    weight_.upload(layer.weight().data(), size_t(layer.weight().numel()));
    if (!layer.bias().empty()) bias_.upload(layer.bias().data(), size_t(layer.bias().numel()));
  }

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& x = *inputs.at(0);
    const int64_t I = layer_.in_features(), O = layer_.out_features();
    require(x.rank() >= 1, where_ + ": input has no batch dimension");
    const int64_t n = x.dim(0);
    require(x.numel() == n * I,
            where_ + ": input " + to_string(x.shape()) + " does not match in_features " + std::to_string(I));
    out.resize({n, O});
    if (n == 0 || O == 0) return;
    const int64_t limit = std::numeric_limits<int>::max();
    require(I <= limit && O <= limit, where_ + ": too many features for cuBLAS");
    const float one = 1.0f, zero = 0.0f;
    // cuBLAS takes int sizes: split very large batches.
    const int64_t piece = std::max<int64_t>(1, std::min(n, limit / std::max<int64_t>(1, std::max(I, O))));
    for (int64_t r0 = 0; r0 < n; r0 += piece) {
      const int m = int(std::min(piece, n - r0));
      if (I == 0) {
        zero_device(out.data() + r0 * O, size_t(m) * size_t(O) * sizeof(float));
        continue;
      }
      SNN_CUBLAS_CHECK(cublasSgemm(ctx_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(O), m, int(I), &one, weight_.data(),
                                   int(I), x.data() + r0 * I, int(I), &zero, out.data() + r0 * O, int(O)),
                       where_);
    }
    if (!bias_.empty()) add_channel_bias(out.data(), bias_.data(), n, O, 1, where_);
  }

 private:
  const Linear& layer_;
  Context& ctx_;
  std::string where_;
  DeviceBuffer<float> weight_, bias_;
};

const bool registered = kernels().add("linear", [](const Layer& l, const std::vector<Shape>&, Context& ctx) {
  return std::make_unique<LinearKernel>(static_cast<const Linear&>(l), ctx);
});

}  // namespace
}  // namespace snn::cuda
