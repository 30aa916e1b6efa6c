// CPU kernel of Conv2d. Dense path: im2col + GEMM (Eigen), several images per GEMM, image blocks in
// parallel. SNN view on sparse inputs (spikes): the event-driven path (event_convolution.hpp), chosen
// per chunk from the input's density (event_path.hpp).
#include <Eigen/Core>
#include <algorithm>
#include <memory>

#include "snn/cpu/event_convolution.hpp"
#include "snn/cpu/event_path.hpp"
#include "snn/cpu/kernel.hpp"
#include "snn/layers/conv2d.hpp"

namespace snn::cpu {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int64_t kColumnPad = 48;  // a multiple of every GEMM panel height (48 = 3 AVX-512 float packets; 24, 12 elsewhere)
int64_t padded_columns(int64_t cols) { return (cols + kColumnPad - 1) / kColumnPad * kColumnPad; }

class Conv2dKernel : public EventWeightKernel {
 public:
  Conv2dKernel(const Conv2d& layer, const Shape& input) : layer_(layer) {
    const Conv2dSpec& s = layer.spec();
    if (s.groups != 1 || input.size() != 3) return;  // grouped convolutions stay dense
    const Shape os = layer.output_shape({input});
    ConvGeometry g;
    g.in_channels = input[0], g.height = input[1], g.width = input[2];
    g.out_channels = os[0], g.out_h = os[1], g.out_w = os[2];
    g.kernel_h = s.kernel_h, g.kernel_w = s.kernel_w, g.stride_h = s.stride_h, g.stride_w = s.stride_w;
    g.pad_h = s.pad_h, g.pad_w = s.pad_w;
    if (!event_path_fits(g)) return;
    events_ = std::make_unique<EventConvolution>(g, layer.weight().data(),
                                                 layer.bias().empty() ? nullptr : layer.bias().data());
    enable_events(g);
  }

  bool supports_channels_last() const override { return events_ != nullptr; }

  void run_events(const Tensor& x, Tensor& out) override {
    const ConvGeometry& g = events_->geometry();
    out.resize({x.dim(0), g.out_channels, g.out_h, g.out_w});
    events_->run(x.data(), x.dim(0), out.data(), inputs_channels_last(), output_channels_last());
  }

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    Shape os = layer_.output_shape({{c, h, w}});
    const int64_t ho = os[1], wo = os[2], hw_out = ho * wo;
    out.resize({n, os[0], ho, wo});
    const Conv2dSpec& s = layer_.spec();
    const int64_t cin_g = s.in_channels / s.groups, cout_g = s.out_channels / s.groups;
    const int64_t k = cin_g * s.kernel_h * s.kernel_w;
    const Tensor& bias = layer_.bias();
    const float* xd = x.data();
    float* od = out.data();
    // Several images share one GEMM ([Cout_g, K] x [K, images·HW]): small per-image products waste most
    // of the GEMM's speed. The block is sized so its im2col buffer stays around 1 MiB (measured best on this
    // machine: 20-23 GMAC/s per core vs 15 with one image per GEMM).
    // A block's columns are padded with zeros to a multiple of kColumnPad, so every column lies in a full
    // panel of Eigen's GEMM (whose narrower remainder panels add over k in another order) and the product
    // is never a GEMV: an image's result is the same whatever its batch and its place in it
    // (tests/core/test_batch_independence.cpp; data-parallel runs rest on it).
    const int64_t per_image = k * hw_out;
    const int64_t block = std::max<int64_t>(1, std::min<int64_t>(16, (int64_t(1) << 18) / std::max<int64_t>(1, per_image)));
    const int64_t blocks = (n + block - 1) / block;
    const int64_t max_cols = padded_columns(block * hw_out);

  #pragma omp parallel
    {
      // Per thread, kept across calls and layers and only ever grown (no allocation, page faults or
      // zero-fill per call: a sweep calls this for every chunk). im2col writes every entry it uses.
      thread_local std::vector<float> col, res;
      if (col.size() < size_t(k * max_cols)) col.resize(size_t(k * max_cols));
      if (res.size() < size_t(cout_g * max_cols)) res.resize(size_t(cout_g * max_cols));
  #pragma omp for schedule(dynamic)
      for (int64_t bi = 0; bi < blocks; ++bi) {
        const int64_t i0 = bi * block, nb = std::min(block, n - i0), cols = padded_columns(nb * hw_out);
        for (int64_t g = 0; g < s.groups; ++g) {
          // im2col: row (ci, ky, kx), column (image, oy, ox); zero outside the image.
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t ky = 0; ky < s.kernel_h; ++ky)
              for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
                float* row = col.data() + ((ci * s.kernel_h + ky) * s.kernel_w + kx) * cols;
                for (int64_t j = 0; j < nb; ++j) {
                  const float* plane = xd + ((i0 + j) * c + g * cin_g + ci) * h * w;
                  for (int64_t oy = 0; oy < ho; ++oy) {
                    const int64_t iy = oy * s.stride_h - s.pad_h + ky;
                    float* r = row + j * hw_out + oy * wo;
                    if (iy < 0 || iy >= h) {
                      for (int64_t ox = 0; ox < wo; ++ox) r[ox] = 0.0f;
                      continue;
                    }
                    const float* src = plane + iy * w;
                    if (s.stride_w == 1) {
                      const int64_t lo = std::max<int64_t>(0, s.pad_w - kx);
                      const int64_t hi = std::min<int64_t>(wo, w + s.pad_w - kx);
                      for (int64_t ox = 0; ox < lo; ++ox) r[ox] = 0.0f;
                      for (int64_t ox = lo; ox < hi; ++ox) r[ox] = src[ox - s.pad_w + kx];
                      for (int64_t ox = std::max(lo, hi); ox < wo; ++ox) r[ox] = 0.0f;
                    } else {
                      // Columns ox in [lo, hi) read inside the row; without a branch per element (and
                      // with the stride a constant for 2, ResNet downsampling) the copy vectorises.
                      const int64_t sw = s.stride_w, off = kx - s.pad_w;
                      const int64_t lo = std::min<int64_t>(wo, off >= 0 ? 0 : (-off + sw - 1) / sw);
                      const int64_t hi = std::max<int64_t>(lo, std::min<int64_t>(wo, w - off <= 0 ? 0 : (w - off - 1) / sw + 1));
                      for (int64_t ox = 0; ox < lo; ++ox) r[ox] = 0.0f;
                      if (sw == 2)
                        for (int64_t ox = lo; ox < hi; ++ox) r[ox] = src[2 * ox + off];
                      else
                        for (int64_t ox = lo; ox < hi; ++ox) r[ox] = src[ox * sw + off];
                      for (int64_t ox = hi; ox < wo; ++ox) r[ox] = 0.0f;
                    }
                  }
                }
                std::fill(row + nb * hw_out, row + cols, 0.0f);  // the padding columns
              }
          Eigen::Map<const RowMatrix> wm(layer_.weight().data() + g * cout_g * k, cout_g, k);
          Eigen::Map<const RowMatrix> cm(col.data(), k, cols);
          Eigen::Map<RowMatrix> rm(res.data(), cout_g, cols);
          rm.noalias() = wm * cm;
          // [Cout_g, images, HW] -> out[image, g·Cout_g + o, HW], adding the bias on the way.
          for (int64_t o = 0; o < cout_g; ++o) {
            const float b = bias.empty() ? 0.0f : bias[g * cout_g + o];
            for (int64_t j = 0; j < nb; ++j) {
              const float* src = res.data() + o * cols + j * hw_out;
              float* dst = od + ((i0 + j) * s.out_channels + g * cout_g + o) * hw_out;
              for (int64_t p = 0; p < hw_out; ++p) dst[p] = src[p] + b;
            }
          }
        }
      }
    }
  }
 private:
  const Conv2d& layer_;
  std::unique_ptr<EventConvolution> events_;  // null: dense only
};

const bool registered = kernels().add("conv2d", [](const Layer& l, const std::vector<Shape>& in) {
  return std::make_unique<Conv2dKernel>(static_cast<const Conv2d&>(l), in.at(0));
});

}  // namespace
}  // namespace snn::cpu
