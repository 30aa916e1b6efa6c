// CUDA kernel of UpsampleNearest: one thread per output element copies through the layer's row and
// column tables (computed by the layer on the host, uploaded once). A copy, so bit-identical to the CPU.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/upsample.hpp"

namespace snn::cuda {
namespace {

__global__ void upsample_kernel(const float* __restrict__ x, const int64_t* __restrict__ rows,
                                const int64_t* __restrict__ cols, float* __restrict__ out, int64_t n_out, int64_t h,
                                int64_t w, int64_t ho, int64_t wo) {
  SNN_GRID_LOOP(k, n_out) {
    const int64_t plane = k / (ho * wo), r = k - plane * ho * wo, oy = r / wo, ox = r - oy * wo;
    out[k] = x[plane * h * w + rows[oy] * w + cols[ox]];
  }
}

class UpsampleKernel : public Kernel {
 public:
  UpsampleKernel(const UpsampleNearest& layer, const Shape& input)
      : where_(where(layer)), in_(input), out_(layer.output_shape({input})) {
    rows_.upload(layer.source_rows(input[1]));
    cols_.upload(layer.source_cols(input[2]));
  }

  void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) override {
    const DeviceTensor& x = *inputs.at(0);
    require(x.rank() == 4 && x.numel() == x.dim(0) * numel_of(in_),
            where_ + ": input " + to_string(x.shape()) + " does not fit " + to_string(in_));
    out.resize({x.dim(0), out_[0], out_[1], out_[2]});
    if (out.numel() == 0) return;
    upsample_kernel<<<blocks_for(out.numel()), kThreads>>>(x.data(), rows_.data(), cols_.data(), out.data(),
                                                           out.numel(), in_[1], in_[2], out_[1], out_[2]);
    check_launch("upsample_kernel", where_);
  }

 private:
  std::string where_;
  Shape in_, out_;
  DeviceBuffer<int64_t> rows_, cols_;
};

const bool registered = kernels().add("upsample_nearest", [](const Layer& l, const std::vector<Shape>& in, Context&) {
  l.output_shape(in);  // checks the input shape, naming the layer
  return std::make_unique<UpsampleKernel>(static_cast<const UpsampleNearest&>(l), in[0]);
});

}  // namespace
}  // namespace snn::cuda
