#include "snn/cpu/event_linear.hpp"

#include <algorithm>

#include "snn/cpu/vec16.hpp"

namespace snn::cpu {

namespace {
constexpr int64_t kTileBytes = 896 * 1024;        // a weight tile stays in L2 (1.25 MiB per core here)
constexpr int64_t kBlockInputs = int64_t(1) << 16;  // input floats per block of samples
}  // namespace

EventLinear::EventLinear(int64_t in_features, int64_t out_features, const float* weight, const float* bias)
    : in_(in_features), out_(out_features) {
  for (int64_t t : {128, 64, 32, 16}) {
    tile_ = t;
    if (t <= (out_ + 15) / 16 * 16 && t * in_ * int64_t(sizeof(float)) <= kTileBytes) break;
  }
  tiles_ = (out_ + tile_ - 1) / tile_;
  weight_.assign(size_t(tiles_ * in_ * tile_), 0.0f);
  bias_.assign(size_t(tiles_ * tile_), 0.0f);
  for (int64_t o = 0; o < out_; ++o) {
    if (bias) bias_[size_t(o)] = bias[o];
    for (int64_t i = 0; i < in_; ++i)
      weight_[size_t(((o / tile_) * in_ + i) * tile_ + o % tile_)] = weight[o * in_ + i];
  }
}

template <int kTile>
void EventLinear::run_tile(const Event* e, const Event* end, int64_t tile, float* out) const {
  constexpr int kVecs = kTile / 16;
  const float* wt = weight_.data() + tile * in_ * kTile;
  Vec16 even[kVecs], odd[kVecs];
  for (int k = 0; k < kVecs; ++k) even[k] = odd[k] = Vec16{};
  for (; end - e >= 2; e += 2) {
    const float v0 = e[0].value, v1 = e[1].value;
    const float* w0 = wt + e[0].weight_offset;
    const float* w1 = wt + e[1].weight_offset;
#pragma GCC unroll 8
    for (int k = 0; k < kVecs; ++k) {
      even[k] += v0 * load16(w0 + 16 * k);
      odd[k] += v1 * load16(w1 + 16 * k);
    }
  }
  if (e != end) {
    const float* w0 = wt + e->weight_offset;
    for (int k = 0; k < kVecs; ++k) even[k] += e->value * load16(w0 + 16 * k);
  }
  const float* b = bias_.data() + tile * kTile;
  const int64_t valid = std::min<int64_t>(kTile, out_ - tile * kTile);
  if (valid == kTile) {
    for (int k = 0; k < kVecs; ++k) store16(out + 16 * k, load16(b + 16 * k) + (even[k] + odd[k]));
  } else {
    float tmp[kTile];
    for (int k = 0; k < kVecs; ++k) store16(tmp + 16 * k, load16(b + 16 * k) + (even[k] + odd[k]));
    std::copy(tmp, tmp + valid, out);
  }
}

void EventLinear::run(const float* x, int64_t n, float* out) const {
  const int64_t block = std::max<int64_t>(1, std::min<int64_t>(256, kBlockInputs / std::max<int64_t>(1, in_)));
  const int64_t blocks = (n + block - 1) / block;
#pragma omp parallel
  {
    // Buffers per thread, kept across calls (the team's threads persist) and only ever grown.
    thread_local std::vector<Event> events;
    thread_local std::vector<int64_t> begin;
    if (events.size() < size_t(block * in_ + 1)) events.resize(size_t(block * in_ + 1));
    if (begin.size() < size_t(block + 1)) begin.resize(size_t(block + 1));
#pragma omp for schedule(dynamic)
    for (int64_t bi = 0; bi < blocks; ++bi) {
      const int64_t s0 = bi * block, ns = std::min(block, n - s0);
      int64_t k = 0;
      for (int64_t s = 0; s < ns; ++s) {
        begin[size_t(s)] = k;
        const float* xs = x + (s0 + s) * in_;
        for (int64_t i = 0; i < in_; ++i) {
          const float v = xs[i];
          events[size_t(k)] = {int32_t(i * tile_), v};
          k += v != 0.0f;
        }
      }
      begin[size_t(ns)] = k;
      for (int64_t tile = 0; tile < tiles_; ++tile)
        for (int64_t s = 0; s < ns; ++s) {
          const Event* b = events.data() + begin[size_t(s)];
          const Event* e = events.data() + begin[size_t(s + 1)];
          float* o = out + (s0 + s) * out_ + tile * tile_;
          switch (tile_) {
            case 128: run_tile<128>(b, e, tile, o); break;
            case 64: run_tile<64>(b, e, tile, o); break;
            case 32: run_tile<32>(b, e, tile, o); break;
            default: run_tile<16>(b, e, tile, o); break;
          }
        }
    }
  }
}

}  // namespace snn::cpu
