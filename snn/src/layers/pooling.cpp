#include "snn/layers/pooling.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "snn/error.hpp"

namespace snn {

PoolLayer::PoolLayer(std::string name, PoolSpec spec) : Layer(std::move(name)), spec_(spec) {
  if (spec_.kernel_h <= 0 || spec_.kernel_w <= 0 || spec_.stride_h <= 0 || spec_.stride_w <= 0 || spec_.pad_h < 0 ||
      spec_.pad_w < 0)
    throw Error("layer '" + this->name() + "': invalid pooling attributes");
  if (2 * spec_.pad_h > spec_.kernel_h || 2 * spec_.pad_w > spec_.kernel_w)
    throw Error("layer '" + this->name() + "': padding must be at most half the kernel size");
}

Shape PoolLayer::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1 || inputs[0].size() != 3) fail("expects one input of shape [C, H, W]");
  const Shape& in = inputs[0];
  if (in[1] + 2 * spec_.pad_h < spec_.kernel_h || in[2] + 2 * spec_.pad_w < spec_.kernel_w)
    fail("input " + to_string(in) + " smaller than the pooling window");
  return {in[0], (in[1] + 2 * spec_.pad_h - spec_.kernel_h) / spec_.stride_h + 1,
          (in[2] + 2 * spec_.pad_w - spec_.kernel_w) / spec_.stride_w + 1};
}

std::string PoolLayer::summary() const {
  std::ostringstream os;
  os << "k" << spec_.kernel_h << "x" << spec_.kernel_w << " s" << spec_.stride_h << " p" << spec_.pad_h;
  return os.str();
}

LayerRecord PoolLayer::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.numbers = {{"kernel_h", double(spec_.kernel_h)}, {"kernel_w", double(spec_.kernel_w)},
               {"stride_h", double(spec_.stride_h)}, {"stride_w", double(spec_.stride_w)},
               {"pad_h", double(spec_.pad_h)},       {"pad_w", double(spec_.pad_w)}};
  return r;
}

PoolSpec PoolLayer::spec_from_record(const LayerRecord& r) {
  PoolSpec s;
  s.kernel_h = int64_t(r.number("kernel_h"));
  s.kernel_w = int64_t(r.number("kernel_w"));
  s.stride_h = int64_t(r.number("stride_h"));
  s.stride_w = int64_t(r.number("stride_w"));
  s.pad_h = int64_t(r.number("pad_h"));
  s.pad_w = int64_t(r.number("pad_w"));
  return s;
}

namespace {
// Calls visit(offset) for each in-bounds input element of output (oy, ox)'s window, in row-major order.
template <class Visit>
inline void for_each_in_window(const PoolSpec& s, int64_t h, int64_t w, int64_t oy, int64_t ox, Visit visit) {
  for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
    const int64_t iy = oy * s.stride_h - s.pad_h + ky;
    if (iy < 0 || iy >= h) continue;
    for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
      const int64_t ix = ox * s.stride_w - s.pad_w + kx;
      if (ix >= 0 && ix < w) visit(iy * w + ix);
    }
  }
}
}  // namespace

void AvgPool2d::forward(const std::vector<const Tensor*>& inputs, Tensor& out) const {
  const Tensor& x = *inputs[0];
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Shape os = output_shape({{c, h, w}});
  const int64_t ho = os[1], wo = os[2];
  out.resize({n, c, ho, wo});
  const float area = float(spec_.kernel_h * spec_.kernel_w);  // divide, as PyTorch does
  const auto& s = spec_;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < n * c; ++p) {
    const float* in = x.data() + p * h * w;
    float* o = out.data() + p * ho * wo;
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox) {
        float acc = 0.0f;
        for_each_in_window(s, h, w, oy, ox, [&](int64_t i) { acc += in[i]; });
        o[oy * wo + ox] = acc / area;
      }
  }
}

std::unique_ptr<Layer> AvgPool2d::from_record(const LayerRecord& r) {
  return std::make_unique<AvgPool2d>(r.name, spec_from_record(r));
}

void MaxPool2d::forward(const std::vector<const Tensor*>& inputs, Tensor& out) const {
  const Tensor& x = *inputs[0];
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Shape os = output_shape({{c, h, w}});
  const int64_t ho = os[1], wo = os[2];
  out.resize({n, c, ho, wo});
  const auto& s = spec_;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < n * c; ++p) {
    const float* in = x.data() + p * h * w;
    float* o = out.data() + p * ho * wo;
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox) {
        float m = -std::numeric_limits<float>::infinity();
        for_each_in_window(s, h, w, oy, ox, [&](int64_t i) { m = std::max(m, in[i]); });
        o[oy * wo + ox] = m;
      }
  }
}

namespace {
struct RunningSums : LayerState {
  Tensor sum;  // [batch, C, H, W]: each input summed over all steps so far
  Tensor max;  // [batch, C, Ho, Wo]: the largest running sum of each window after the previous step
};
}  // namespace

std::unique_ptr<LayerState> MaxPool2d::make_state(const std::vector<Shape>& inputs, int64_t batch) const {
  auto st = std::make_unique<RunningSums>();
  Shape s = {batch}, o = {batch};
  s.insert(s.end(), inputs[0].begin(), inputs[0].end());
  const Shape out = output_shape(inputs);
  o.insert(o.end(), out.begin(), out.end());
  st->sum = Tensor(s, 0.0f);
  st->max = Tensor(o, 0.0f);
  return st;
}

void MaxPool2d::forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, LayerState* state,
                            const StepChunk& chunk) const {
  const Tensor& x = *inputs[0];
  auto* st = static_cast<RunningSums*>(state);
  const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3), b = chunk.batch;
  Shape os = output_shape({{c, h, w}});
  const int64_t ho = os[1], wo = os[2];
  out.resize({x.dim(0), c, ho, wo});
  const auto& s = spec_;
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
          for_each_in_window(s, h, w, oy, ox, [&](int64_t i) { best = std::max(best, acc[i]); });
          // At the first step the "previous max" is 0 (nothing emitted yet); a negative analog input
          // then gives a negative output, exactly like max pooling of the first step's values.
          const int64_t k = oy * wo + ox;
          o[k] = best - prev[k];
          prev[k] = best;
        }
    }
  }
}

std::string MaxPool2d::summary() const {
  return PoolLayer::summary() + " spiking: emits the increase of the window's largest running input sum";
}

std::unique_ptr<Layer> MaxPool2d::from_record(const LayerRecord& r) {
  return std::make_unique<MaxPool2d>(r.name, spec_from_record(r));
}

}  // namespace snn
