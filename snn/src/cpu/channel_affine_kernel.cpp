// CPU kernel of ChannelAffine: y = x·scale[c] + shift[c], the same in both views (applied to every step).
// Two rounded operations (the build disables contraction), which the CUDA twin reproduces exactly.
#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/channel_affine.hpp"

namespace snn::cpu {
namespace {

class ChannelAffineKernel : public Kernel {
 public:
  ChannelAffineKernel(const ChannelAffine& layer, const Shape& input) : layer_(layer), per_sample_(numel_of(input)) {}

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    const int64_t n = x.rank() ? x.dim(0) : 0;
    require(x.rank() >= 2 && x.dim(1) == layer_.channels() && x.numel() == n * per_sample_,
            "layer '" + layer_.name() + "' (" + layer_.type() + "): input " + to_string(x.shape()) + " does not fit " +
                std::to_string(layer_.channels()) + " channels");
    out.resize(x.shape());
    const int64_t C = layer_.channels(), inner = per_sample_ / C;
    const float* scale = layer_.scale().data();
    const float* shift = layer_.shift().data();
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n * C; ++p) {
      const float s = scale[p % C], b = shift[p % C];
      const float* in = x.data() + p * inner;
      float* o = out.data() + p * inner;
      for (int64_t i = 0; i < inner; ++i) o[i] = in[i] * s + b;
    }
  }

 private:
  const ChannelAffine& layer_;
  int64_t per_sample_;
};

const bool registered = kernels().add("channel_affine", [](const Layer& l, const std::vector<Shape>& in) {
  l.output_shape(in);  // checks the input shape, naming the layer
  return std::make_unique<ChannelAffineKernel>(static_cast<const ChannelAffine&>(l), in[0]);
});

}  // namespace
}  // namespace snn::cpu
