// CUDA kernel of ChannelGather: one thread per output element copies its value from the input channel
// the layer names. The tables (source input and channel per output channel, channels per input) are
// uploaded once; the input pointers go in a small device array, uploaded again only when they change.
// A copy, so bit-identical to the CPU.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/channel_gather.hpp"

namespace snn::cuda {
namespace {

// out [n, C, plane]; output channel c reads channel src_ch[c] of input src_in[c], which has in_ch[src_in[c]]
// channels.
__global__ void channel_gather_kernel(const float* const* __restrict__ inputs, const int64_t* __restrict__ src_in,
                                      const int64_t* __restrict__ src_ch, const int64_t* __restrict__ in_ch,
                                      float* __restrict__ out, int64_t n_out, int64_t C, int64_t plane) {
  SNN_GRID_LOOP(k, n_out) {
    const int64_t s = k / (C * plane), r = k - s * C * plane, c = r / plane, i = r - c * plane;
    const int64_t j = src_in[c];
    out[k] = inputs[j][(s * in_ch[j] + src_ch[c]) * plane + i];
  }
}

class ChannelGatherKernel : public Kernel {
 public:
  ChannelGatherKernel(const ChannelGather& layer, const std::vector<Shape>& inputs)
      : where_(where(layer)), in_(inputs), out_(layer.output_shape(inputs)) {
    plane_ = 1;
    for (size_t d = 1; d < out_.size(); ++d) plane_ *= out_[d];
    std::vector<int64_t> in_ch;
    for (const Shape& s : in_) in_ch.push_back(s[0]);
    src_in_.upload(layer.source_input());
    src_ch_.upload(layer.source_channel());
    in_ch_.upload(in_ch);
  }

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    require(inputs.size() == in_.size(), where_ + ": expects " + std::to_string(in_.size()) + " inputs");
    const int64_t n = inputs[0]->rank() ? inputs[0]->dim(0) : 0;
    std::vector<const float*> ptrs;
    for (size_t i = 0; i < in_.size(); ++i) {
      const DeviceTensor& x = *inputs[i];
      require(
          x.rank() >= 1 && x.dim(0) == n && x.numel() == n * numel_of(in_[i]),
          where_ + ": input " + std::to_string(i) + " " + to_string(x.shape()) + " does not fit " + to_string(in_[i]));
      ptrs.push_back(x.data());
    }
    Shape os = {n};
    os.insert(os.end(), out_.begin(), out_.end());
    out.resize(os);
    if (out.numel() == 0) return;
    if (ptrs != host_ptrs_) {  // the engine reuses buffers, so this is rare after the first call
      ptrs_.upload(ptrs);
      host_ptrs_ = ptrs;
    }
    channel_gather_kernel<<<blocks_for(out.numel()), kThreads>>>(
        ptrs_.data(), src_in_.data(), src_ch_.data(), in_ch_.data(), out.data(), out.numel(), out_[0], plane_);
    check_launch("channel_gather_kernel", where_);
  }

 private:
  std::string where_;
  std::vector<Shape> in_;
  Shape out_;
  int64_t plane_;  // elements per channel: H·W, or 1 for vectors
  DeviceBuffer<int64_t> src_in_, src_ch_, in_ch_;
  DeviceBuffer<const float*> ptrs_;
  std::vector<const float*> host_ptrs_;
};

const bool registered = kernels().add("channel_gather", [](const Layer& l, const std::vector<Shape>& in, Context&) {
  return std::make_unique<ChannelGatherKernel>(static_cast<const ChannelGather&>(l), in);
});

}  // namespace
}  // namespace snn::cuda
