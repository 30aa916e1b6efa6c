// CPU kernel of ChannelGather: each output channel is a copy of one input channel (an H·W plane, or one
// value for vectors). The same in both views: it only moves values.
#include <cstring>

#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/channel_gather.hpp"

namespace snn::cpu {
namespace {

class ChannelGatherKernel : public Kernel {
 public:
  ChannelGatherKernel(const ChannelGather& layer, const std::vector<Shape>& inputs)
      : layer_(layer), in_(inputs), out_(layer.output_shape(inputs)) {
    plane_ = 1;
    for (size_t d = 1; d < out_.size(); ++d) plane_ *= out_[d];
  }

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    require(inputs.size() == in_.size(), where() + "expects " + std::to_string(in_.size()) + " inputs");
    const int64_t n = inputs[0]->rank() ? inputs[0]->dim(0) : 0;
    for (size_t i = 0; i < in_.size(); ++i)
      require(inputs[i]->rank() >= 1 && inputs[i]->dim(0) == n && inputs[i]->numel() == n * numel_of(in_[i]),
              where() + "input " + std::to_string(i) + " " + to_string(inputs[i]->shape()) + " does not fit " +
                  to_string(in_[i]));
    Shape os = {n};
    os.insert(os.end(), out_.begin(), out_.end());
    out.resize(os);
    const int64_t C = out_[0];
    const auto& src_in = layer_.source_input();
    const auto& src_ch = layer_.source_channel();
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n * C; ++p) {
      const int64_t s = p / C, c = p - s * C;
      const size_t i = size_t(src_in[size_t(c)]);
      const float* from = inputs[i]->data() + (s * in_[i][0] + src_ch[size_t(c)]) * plane_;
      std::memcpy(out.data() + p * plane_, from, size_t(plane_) * sizeof(float));
    }
  }

 private:
  std::string where() const { return "layer '" + layer_.name() + "' (" + layer_.type() + "): "; }

  const ChannelGather& layer_;
  std::vector<Shape> in_;
  Shape out_;
  int64_t plane_;  // elements per channel: H·W, or 1 for vectors
};

const bool registered = kernels().add("channel_gather", [](const Layer& l, const std::vector<Shape>& in) {
  return std::make_unique<ChannelGatherKernel>(static_cast<const ChannelGather&>(l), in);
});

}  // namespace
}  // namespace snn::cpu
