// CPU kernel of MaxPool2d. ANN view: max pooling. SNN view: the exact spiking rule of pooling.hpp: a
// running sum of every input, and at each step the increase of the window's largest running sum.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "snn/cpu/kernel.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cpu {
namespace {

struct RunningSums : KernelState {
  Tensor sum;  // [batch, C, H, W]: each input summed over all steps so far
  Tensor max;  // [batch, C, Ho, Wo]: the largest running sum of each window after the previous step
};

class MaxPoolKernel : public Kernel {
 public:
  MaxPoolKernel(const MaxPool2d& layer, const Shape& input)
      : in_(input), out_(layer.output_shape({input})), g_(layer.geometry(input[1], input[2])) {}

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    const int64_t n = x.dim(0), c = in_[0], h = in_[1], w = in_[2], ho = out_[1], wo = out_[2];
    out.resize({n, c, ho, wo});
    const PoolGeometry& g = g_;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n * c; ++p) {
      const float* in = x.data() + p * h * w;
      float* o = out.data() + p * ho * wo;
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          float m = -std::numeric_limits<float>::infinity();
          for_each_in_window(g, oy, ox, [&](int64_t i) { m = std::max(m, in[i]); });
          o[oy * wo + ox] = m;
        }
    }
  }

  std::unique_ptr<KernelState> make_state(int64_t batch) const override {
    auto st = std::make_unique<RunningSums>();
    st->sum = Tensor({batch, in_[0], in_[1], in_[2]}, 0.0f);
    st->max = Tensor({batch, out_[0], out_[1], out_[2]}, 0.0f);
    return st;
  }

  void forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState* state,
                   const StepChunk& chunk) override {
    const Tensor& x = *inputs[0];
    auto* st = static_cast<RunningSums*>(state);
    const int64_t c = in_[0], h = in_[1], w = in_[2], ho = out_[1], wo = out_[2], b = chunk.batch;
    out.resize({x.dim(0), c, ho, wo});
    const PoolGeometry& g = g_;
    // Planes (image, channel) are independent; time runs sequentially inside each.
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < b * c; ++p) {
      float* acc = st->sum.data() + p * h * w;
      float* prev = st->max.data() + p * ho * wo;
      for (int64_t t = 0; t < chunk.steps; ++t) {
        const float* in = x.data() + (t * b * c + p) * h * w;
        float* o = out.data() + (t * b * c + p) * ho * wo;
        for (int64_t i = 0; i < h * w; ++i) acc[i] += in[i];
        for (int64_t oy = 0; oy < ho; ++oy)
          for (int64_t ox = 0; ox < wo; ++ox) {
            float best = -std::numeric_limits<float>::infinity();
            for_each_in_window(g, oy, ox, [&](int64_t i) { best = std::max(best, acc[i]); });
            // At the first step the "previous max" is 0 (nothing emitted yet); a negative analog input
            // then gives a negative output, exactly like max pooling of the first step's values.
            const int64_t k = oy * wo + ox;
            o[k] = best - prev[k];
            prev[k] = best;
          }
      }
    }
  }

 private:
  Shape in_, out_;
  PoolGeometry g_;  // windows as PyTorch's, ceil_mode included; never empty, so −∞ never escapes
};

const bool registered = kernels().add("maxpool2d", [](const Layer& l, const std::vector<Shape>& in) {
  return std::make_unique<MaxPoolKernel>(static_cast<const MaxPool2d&>(l), in.at(0));
});

}  // namespace
}  // namespace snn::cpu
