// CUDA kernel of ChannelAffine: y = x·scale[c] + shift[c], one thread per element, with explicitly
// rounded multiply and add (never fused): bit-identical to the CPU twin.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/channel_affine.hpp"

namespace snn::cuda {
namespace {

__global__ void channel_affine_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                      const float* __restrict__ shift, float* __restrict__ out, int64_t n, int64_t C,
                                      int64_t inner) {
  SNN_GRID_LOOP(k, n) {
    const int64_t c = (k / inner) % C;
    out[k] = __fadd_rn(__fmul_rn(x[k], scale[c]), shift[c]);
  }
}

class ChannelAffineKernel : public Kernel {
 public:
  ChannelAffineKernel(const ChannelAffine& layer, const Shape& input)
      : where_(where(layer)), channels_(layer.channels()), per_sample_(numel_of(input)) {
    scale_.upload(layer.scale().data(), size_t(channels_));
    shift_.upload(layer.shift().data(), size_t(channels_));
  }

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& x = *inputs.at(0);
    const int64_t n = x.rank() ? x.dim(0) : 0;
    require(x.rank() >= 2 && x.dim(1) == channels_ && x.numel() == n * per_sample_,
            where_ + ": input " + to_string(x.shape()) + " does not fit " + std::to_string(channels_) + " channels");
    out.resize(x.shape());
    if (out.numel() == 0) return;
    channel_affine_kernel<<<blocks_for(out.numel()), kThreads>>>(x.data(), scale_.data(), shift_.data(), out.data(),
                                                                 out.numel(), channels_, per_sample_ / channels_);
    check_launch("channel_affine_kernel", where_);
  }

 private:
  std::string where_;
  int64_t channels_, per_sample_;
  DeviceBuffer<float> scale_, shift_;
};

const bool registered = kernels().add("channel_affine", [](const Layer& l, const std::vector<Shape>& in, Context&) {
  l.output_shape(in);  // checks the input shape, naming the layer
  return std::make_unique<ChannelAffineKernel>(static_cast<const ChannelAffine&>(l), in[0]);
});

}  // namespace
}  // namespace snn::cuda
