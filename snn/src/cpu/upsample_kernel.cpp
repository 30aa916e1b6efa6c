// CPU kernel of UpsampleNearest: a copy through the layer's row and column tables (made once, here). The
// same in both views: it only replicates values.
#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/upsample.hpp"

namespace snn::cpu {
namespace {

class UpsampleKernel : public Kernel {
 public:
  UpsampleKernel(const UpsampleNearest& layer, const Shape& input)
      : layer_(layer),
        in_(input),
        out_(layer.output_shape({input})),
        rows_(layer.source_rows(input[1])),
        cols_(layer.source_cols(input[2])) {}

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    require(x.rank() == 4 && x.dim(1) == in_[0] && x.dim(2) == in_[1] && x.dim(3) == in_[2],
            "layer '" + layer_.name() + "' (" + layer_.type() + "): input " + to_string(x.shape()) + " does not fit " +
                to_string(in_));
    const int64_t n = x.dim(0), c = in_[0], h = in_[1], w = in_[2], ho = out_[1], wo = out_[2];
    out.resize({n, c, ho, wo});
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n * c; ++p) {
      const float* in = x.data() + p * h * w;
      float* o = out.data() + p * ho * wo;
      for (int64_t oy = 0; oy < ho; ++oy) {
        const float* row = in + rows_[size_t(oy)] * w;
        for (int64_t ox = 0; ox < wo; ++ox) o[oy * wo + ox] = row[cols_[size_t(ox)]];
      }
    }
  }

 private:
  const UpsampleNearest& layer_;
  Shape in_, out_;
  std::vector<int64_t> rows_, cols_;
};

const bool registered = kernels().add("upsample_nearest", [](const Layer& l, const std::vector<Shape>& in) {
  l.output_shape(in);  // checks the input shape, naming the layer
  return std::make_unique<UpsampleKernel>(static_cast<const UpsampleNearest&>(l), in[0]);
});

}  // namespace
}  // namespace snn::cpu
