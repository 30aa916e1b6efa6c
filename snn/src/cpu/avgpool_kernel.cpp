// CPU kernel of AvgPool2d and AdaptiveAvgPool2d: linear, so the same code serves both views (spikes
// average as rates do). Each output sums its window (snn/pool_window.hpp) in row-major order and divides
// by the window's divisor, as PyTorch does.
#include <algorithm>
#include <climits>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cpu {
namespace {

class AvgPoolKernel : public Kernel {
 public:
  AvgPoolKernel(const Layer& layer, const PoolGeometry& g) : layer_(layer), g_(g), fixed_(g) {
    // Adaptive windows that tile the plane evenly (a global average pooling among them) are fixed
    // windows of kernel = stride = plane / output: the same windows, divisors and summation order.
    if (g.adaptive && g.h % g.out_h == 0 && g.w % g.out_w == 0) {
      fixed_.adaptive = false;
      fixed_.kernel_h = fixed_.stride_h = g.h / g.out_h;
      fixed_.kernel_w = fixed_.stride_w = g.w / g.out_w;
      fixed_.pad_h = fixed_.pad_w = 0;
    }
    // Every window inside the plane (no padding, none cut by ceil mode): one divisor, and the sums can
    // run a window tap at a time over whole output rows (vectorised), in the same row-major order.
    const PoolGeometry& f = fixed_;
    const PoolWindow first = pool_window(f, 0, 0);
    uniform_ = !f.adaptive && f.pad_h == 0 && f.pad_w == 0 && (f.out_h - 1) * f.stride_h + f.kernel_h <= f.h &&
               (f.out_w - 1) * f.stride_w + f.kernel_w <= f.w && first.divisor == f.kernel_h * f.kernel_w;
  }

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    require(x.rank() == 4 && x.dim(2) == g_.h && x.dim(3) == g_.w,
            "layer '" + layer_.name() + "' (" + layer_.type() + "): input " + to_string(x.shape()) +
                " does not fit the prepared plane " + std::to_string(g_.h) + "x" + std::to_string(g_.w));
    const int64_t n = x.dim(0), c = x.dim(1), h = g_.h, w = g_.w, ho = g_.out_h, wo = g_.out_w;
    out.resize({n, c, ho, wo});
#if defined(__AVX512F__)
    // Narrow outputs (a global average pooling's are 1×1): a row pass would be a chain of dependent adds
    // per output, so 16 planes run side by side instead, one lane each, in the same order.
    if (uniform_ && wo < 16 && h * w * 16 <= INT32_MAX) {
      narrow_planes(x.data(), n * c, out.data());
      return;
    }
#endif
    if (uniform_) {
      const PoolGeometry& f = fixed_;
      const float divisor = float(f.kernel_h * f.kernel_w);
      const int64_t sw = f.stride_w;
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < n * c; ++p) {
        const float* in = x.data() + p * h * w;
        float* o = out.data() + p * ho * wo;
        for (int64_t oy = 0; oy < ho; ++oy) {
          float* row = o + oy * wo;
          for (int64_t ox = 0; ox < wo; ++ox) row[ox] = 0.0f;
          for (int64_t ky = 0; ky < f.kernel_h; ++ky)
            for (int64_t kx = 0; kx < f.kernel_w; ++kx) {
              const float* src = in + (oy * f.stride_h + ky) * w + kx;
              for (int64_t ox = 0; ox < wo; ++ox) row[ox] += src[ox * sw];
            }
          for (int64_t ox = 0; ox < wo; ++ox) row[ox] /= divisor;
        }
      }
      return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n * c; ++p) {
      const float* in = x.data() + p * h * w;
      float* o = out.data() + p * ho * wo;
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          const PoolWindow win = pool_window(g_, oy, ox);
          float acc = 0.0f;
          for_each_in_window(win, w, [&](int64_t i) { acc += in[i]; });
          o[oy * wo + ox] = acc / float(win.divisor);
        }
    }
  }

 private:
#if defined(__AVX512F__)
  void narrow_planes(const float* x, int64_t planes, float* out) const {
    const PoolGeometry& f = fixed_;
    const int64_t hw = f.h * f.w, hwo = f.out_h * f.out_w, blocks = (planes + 15) / 16;
    const __m512 divisor = _mm512_set1_ps(float(f.kernel_h * f.kernel_w));
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i in_offset = _mm512_mullo_epi32(lane, _mm512_set1_epi32(int32_t(hw)));
    const __m512i out_offset = _mm512_mullo_epi32(lane, _mm512_set1_epi32(int32_t(hwo)));
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t p0 = b * 16, count = std::min<int64_t>(16, planes - p0);
      const __mmask16 m = count == 16 ? __mmask16(0xffff) : __mmask16((1u << count) - 1);
      const float* in = x + p0 * hw;
      for (int64_t oy = 0; oy < f.out_h; ++oy)
        for (int64_t ox = 0; ox < f.out_w; ++ox) {
          __m512 acc = _mm512_setzero_ps();
          for (int64_t ky = 0; ky < f.kernel_h; ++ky)
            for (int64_t kx = 0; kx < f.kernel_w; ++kx) {
              const float* tap = in + (oy * f.stride_h + ky) * f.w + ox * f.stride_w + kx;
              acc = _mm512_add_ps(acc, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, in_offset, tap, 4));
            }
          _mm512_mask_i32scatter_ps(out + p0 * hwo + oy * f.out_w + ox, m, out_offset, _mm512_div_ps(acc, divisor), 4);
        }
    }
  }
#endif

  const Layer& layer_;
  PoolGeometry g_;
  PoolGeometry fixed_;  // g_, with evenly tiling adaptive windows as fixed ones
  bool uniform_ = false;
};

// output_shape first: it checks the input shape, naming the layer.
const bool registered = kernels().add("avgpool2d", [](const Layer& l, const std::vector<Shape>& in) {
  l.output_shape(in);
  return std::make_unique<AvgPoolKernel>(l, static_cast<const AvgPool2d&>(l).geometry(in[0][1], in[0][2]));
});
const bool registered_adaptive = kernels().add("adaptive_avgpool2d", [](const Layer& l, const std::vector<Shape>& in) {
  l.output_shape(in);
  return std::make_unique<AvgPoolKernel>(l, static_cast<const AdaptiveAvgPool2d&>(l).geometry(in[0][1], in[0][2]));
});

}  // namespace
}  // namespace snn::cpu
