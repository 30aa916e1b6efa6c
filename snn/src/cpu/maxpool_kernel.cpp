// CPU kernel of MaxPool2d. ANN view: max pooling. SNN view: the exact spiking rule of pooling.hpp: a
// running sum of every input, and at each step the increase of the window's largest running sum.
// Windows are separable (rows depend only on oy, columns only on ox, adaptive windows included), so a
// window's max is taken in two passes: over its rows, then over its columns. A max is exact in any
// order, so this equals the direct window scan.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "snn/cpu/kernel.hpp"
#include "snn/cpu/plane_stage.hpp"
#include "snn/layers/pooling.hpp"

namespace snn::cpu {
namespace {

struct RunningSums : KernelState {
  Tensor sum;  // [batch, C, H, W]: each input summed over all steps so far
  Tensor max;  // [batch, C, Ho, Wo]: the largest running sum of each window after the previous step
};

class MaxPoolKernel : public Kernel, public PlaneStage {
 public:
  MaxPoolKernel(const MaxPool2d& layer, const Shape& input)
      : in_(input), out_(layer.output_shape({input})), g_(layer.geometry(input[1], input[2])) {
    for (int64_t oy = 0; oy < out_[1]; ++oy) {
      const PoolWindow win = pool_window(g_, oy, 0);
      rows_.emplace_back(win.y0, win.y1);
    }
    for (int64_t ox = 0; ox < out_[2]; ++ox) {
      const PoolWindow win = pool_window(g_, 0, ox);
      cols_.emplace_back(win.x0, win.x1);
      full_width_ = std::max(full_width_, win.x1 - win.x0);
    }
    // The longest run of full-width columns whose windows start a constant stride apart (all but the
    // clipped borders of an ordinary pooling): their maxima are a strided copy of the sliding max.
    for (int64_t a = 0; a < out_[2];) {
      if (cols_[size_t(a)].second - cols_[size_t(a)].first != full_width_) {
        ++a;
        continue;
      }
      int64_t b = a + 1, step = 0;
      if (b < out_[2] && cols_[size_t(b)].second - cols_[size_t(b)].first == full_width_) {
        step = cols_[size_t(b)].first - cols_[size_t(a)].first;
        while (b < out_[2] && cols_[size_t(b)].second - cols_[size_t(b)].first == full_width_ &&
               cols_[size_t(b)].first - cols_[size_t(b - 1)].first == step)
          ++b;
      }
      if (b - a > regular_end_ - regular_begin_) regular_begin_ = a, regular_end_ = b, regular_step_ = step;
      a = b;
    }
  }

  void forward(const std::vector<const Tensor*>& inputs, Tensor& out) override {
    const Tensor& x = *inputs[0];
    const int64_t n = x.dim(0), c = in_[0], h = in_[1], w = in_[2], ho = out_[1], wo = out_[2];
    out.resize({n, c, ho, wo});
#pragma omp parallel
    {
      std::vector<float> scratch(static_cast<size_t>(scratch_size()));
#pragma omp for schedule(static)
      for (int64_t p = 0; p < n * c; ++p)
        window_max(x.data() + p * h * w, scratch.data(), out.data() + p * ho * wo);
    }
  }

  std::unique_ptr<KernelState> make_state(int64_t batch) const override {
    auto st = std::make_unique<RunningSums>();
    st->sum = Tensor({batch, in_[0], in_[1], in_[2]}, 0.0f);
    st->max = Tensor({batch, out_[0], out_[1], out_[2]}, 0.0f);
    return st;
  }

  bool reset_state(KernelState& state) const override {
    auto& st = static_cast<RunningSums&>(state);
    st.sum.fill(0.0f);
    st.max.fill(0.0f);
    return true;
  }

  void forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState* state,
                   const StepChunk& chunk) override {
    const Tensor& x = *inputs[0];
    const int64_t c = in_[0], b = chunk.batch, in_plane = plane_input_size(), out_plane = plane_output_size();
    out.resize({x.dim(0), c, out_[1], out_[2]});
    // Planes (image, channel) are independent; time runs sequentially inside each.
#pragma omp parallel
    {
      std::vector<float> scratch(static_cast<size_t>(plane_scratch_size()));
#pragma omp for schedule(static)
      for (int64_t p = 0; p < b * c; ++p)
        for (int64_t t = 0; t < chunk.steps; ++t)
          step_plane(x.data() + (t * b * c + p) * in_plane, out.data() + (t * b * c + p) * out_plane, state, p,
                     scratch.data());
    }
  }

  const PlaneStage* plane_stage() const override { return this; }
  Shape stage_output_shape() const override { return out_; }
  int64_t plane_input_size() const override { return in_[1] * in_[2]; }
  int64_t plane_output_size() const override { return out_[1] * out_[2]; }
  int64_t plane_scratch_size() const override { return scratch_size() + plane_output_size(); }

  void step_plane(const float* in, float* o, KernelState* state, int64_t p, float* scratch) const override {
    auto* st = static_cast<RunningSums*>(state);
    const int64_t hw = plane_input_size(), hwo = plane_output_size();
    float* acc = st->sum.data() + p * hw;
    float* prev = st->max.data() + p * hwo;
    float* best = scratch + scratch_size();
    for (int64_t i = 0; i < hw; ++i) acc[i] += in[i];
    window_max(acc, scratch, best);
    // At the first step the "previous max" is 0 (nothing emitted yet); a negative analog input then
    // gives a negative output, exactly like max pooling of the first step's values.
    for (int64_t k = 0; k < hwo; ++k) {
      o[k] = best[k] - prev[k];
      prev[k] = best[k];
    }
  }

 private:
  // out[oy][ox] = the max of plane over the window (oy, ox); row_max: scratch_size() floats.
  // Rows first: the max over each output row's input rows is a contiguous, vectorised pass; then per
  // output row a sliding max of the full window width (again contiguous passes), from which each output
  // column picks its window's start. Columns whose window is clipped (borders, ceil_mode, adaptive
  // windows of another width) take the direct max over their columns.
  void window_max(const float* plane, float* row_max, float* out) const {
    const int64_t w = in_[2], ho = out_[1], wo = out_[2];
    float* slide = row_max + ho * w;  // w floats
    for (int64_t oy = 0; oy < ho; ++oy) {
      float* v = row_max + oy * w;
      const auto [y0, y1] = rows_[size_t(oy)];
      std::copy(plane + y0 * w, plane + (y0 + 1) * w, v);
      for (int64_t y = y0 + 1; y < y1; ++y) {
        const float* r = plane + y * w;
        for (int64_t x = 0; x < w; ++x) v[x] = std::max(v[x], r[x]);
      }
      const int64_t reach = w - full_width_ + 1;  // slide[x] = max of v[x, x + full_width_)
      std::copy(v, v + reach, slide);
      for (int64_t j = 1; j < full_width_; ++j)
        for (int64_t x = 0; x < reach; ++x) slide[x] = std::max(slide[x], v[x + j]);
      float* o = out + oy * wo;
      // The regular columns: a strided copy (constant strides vectorise; one scalar pick each measured
      // most of the spiking pooling stage of ResNet-18's stem).
      const float* first = slide + (regular_begin_ < regular_end_ ? cols_[size_t(regular_begin_)].first : 0);
      const int64_t regular = regular_end_ - regular_begin_;
      float* ro = o + regular_begin_;
      if (regular_step_ == 2)
        for (int64_t i = 0; i < regular; ++i) ro[i] = first[2 * i];
      else if (regular_step_ == 1)
        std::copy(first, first + regular, ro);
      else
        for (int64_t i = 0; i < regular; ++i) ro[i] = first[i * regular_step_];
      for (int64_t ox = 0; ox < wo; ++ox) {
        if (ox == regular_begin_) ox = regular_end_;
        if (ox >= wo) break;
        const auto [x0, x1] = cols_[size_t(ox)];
        if (x1 - x0 == full_width_) {
          o[ox] = slide[x0];
        } else {
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t ix = x0; ix < x1; ++ix) m = std::max(m, v[ix]);
          o[ox] = m;
        }
      }
    }
  }

  int64_t scratch_size() const { return (out_[1] + 1) * in_[2]; }

 private:
  Shape in_, out_;
  PoolGeometry g_;  // windows as PyTorch's, ceil_mode included; never empty, so −∞ never escapes
  std::vector<std::pair<int64_t, int64_t>> rows_, cols_;  // per output row / column: input rows / columns
  int64_t full_width_ = 1;  // the widest column window (the unclipped kernel width)
  // Output columns [regular_begin_, regular_end_): full width, windows regular_step_ apart.
  int64_t regular_begin_ = 0, regular_end_ = 0, regular_step_ = 1;
};

const bool registered = kernels().add("maxpool2d", [](const Layer& l, const std::vector<Shape>& in) {
  return std::make_unique<MaxPoolKernel>(static_cast<const MaxPool2d&>(l), in.at(0));
});

}  // namespace
}  // namespace snn::cpu
