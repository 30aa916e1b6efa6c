#include "snn/cpu/event_convolution.hpp"

#include <algorithm>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "snn/cpu/transpose.hpp"
#include "snn/cpu/vec16.hpp"

namespace snn::cpu {

namespace {
// Weight tiles are sized to stay in L2 (1.25 MiB per core here) next to a block's event lists.
constexpr int64_t kTileBytes = 640 * 1024;
// Input floats per block of samples whose events are listed together (and share each weight tile's
// trip through L2).
constexpr int64_t kBlockInputs = int64_t(1) << 16;
}  // namespace

// The non-zero inputs of one sample in position order (row-major), channels ascending within a
// position, so the events of the positions x0..x1 of one row are one contiguous run. An event is its
// value and x·in_channels + channel (which, less the window's x0·in_channels, indexes the weight tap).
struct SampleEvents {
  std::vector<int32_t> index;
  std::vector<float> value;
  std::vector<int32_t> begin;  // per position, plus the end

  // Rows no output reads (row_used[y] == 0, e.g. odd rows under a 1×1 stride-2 kernel) get no events.
  void build(const float* x, const ConvGeometry& g, const std::vector<char>& row_used) {
    const int64_t positions = g.height * g.width, channels = g.in_channels, width = g.width;
    begin.assign(size_t(positions + 1), 0);
    int32_t* count = begin.data() + 1;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = 0; y < g.height; ++y) {
        if (!row_used[size_t(y)]) continue;
        const float* xr = x + c * positions + y * width;
        int32_t* cr = count + y * width;
        for (int64_t i = 0; i < width; ++i) cr[i] += xr[i] != 0.0f;
      }
    for (int64_t p = 1; p < positions; ++p) count[p] += count[p - 1];
    const size_t total = size_t(begin[size_t(positions)]);
    if (index.size() < total) {
      index.resize(total);
      value.resize(total);
    }
    // Fill: a cursor per position; channels ascending because c is the outer loop.
    cursor_.assign(begin.begin(), begin.end() - 1);
    int32_t* idx = index.data();
    float* val = value.data();
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t y = 0; y < g.height; ++y) {
        if (!row_used[size_t(y)]) continue;
        const float* xr = x + c * positions + y * width;
        int32_t* cur = cursor_.data() + y * width;
        int64_t i = 0;
#if defined(__AVX512F__)
        for (; i + 16 <= width; i += 16) {
          unsigned nz = _mm512_cmp_ps_mask(_mm512_loadu_ps(xr + i), _mm512_setzero_ps(), _CMP_NEQ_UQ);
          while (nz) {
            const int64_t q = i + __builtin_ctz(nz);
            nz &= nz - 1;
            const int32_t k = cur[q]++;
            idx[k] = int32_t(q * channels + c);
            val[k] = xr[q];
          }
        }
#endif
        for (; i < width; ++i)
          if (xr[i] != 0.0f) {
            const int32_t k = cur[i]++;
            idx[k] = int32_t(i * channels + c);
            val[k] = xr[i];
          }
      }
  }

 private:
  std::vector<int32_t> cursor_;
};

EventConvolution::EventConvolution(const ConvGeometry& g, const float* weight, const float* bias) : g_(g) {
  const int64_t taps = g.kernel_h * g.kernel_w, per_channel_row = taps * g.in_channels * int64_t(sizeof(float));
  tile_ = 16;
  for (int64_t t : {128, 64, 32}) {
    if (t <= (g.out_channels + 15) / 16 * 16 && t * per_channel_row <= kTileBytes) {
      tile_ = t;
      break;
    }
  }
  tiles_ = (g.out_channels + tile_ - 1) / tile_;
  row_used_.assign(size_t(g.height), 0);
  for (int64_t oy = 0; oy < g.out_h; ++oy)
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      const int64_t y = oy * g.stride_h - g.pad_h + ky;
      if (y >= 0 && y < g.height) row_used_[size_t(y)] = 1;
    }
  weight_.assign(size_t(tiles_ * taps * g.in_channels * tile_), 0.0f);
  bias_.assign(size_t(tiles_ * tile_), 0.0f);
  for (int64_t o = 0; o < g.out_channels; ++o) {
    const int64_t tile = o / tile_, j = o % tile_;
    if (bias) bias_[size_t(o)] = bias[o];
    for (int64_t c = 0; c < g.in_channels; ++c)
      for (int64_t k = 0; k < taps; ++k)
        weight_[size_t(((tile * taps + k) * g.in_channels + c) * tile_ + j)] = weight[(o * g.in_channels + c) * taps + k];
  }
}

template <int kTile>
void EventConvolution::run_tile(const SampleEvents& ev, int64_t tile, float* row, float* out) const {
  constexpr int kVecs = kTile / 16;
  const ConvGeometry& g = g_;
  const int64_t cin = g.in_channels, taps = g.kernel_h * g.kernel_w, out_hw = g.out_h * g.out_w;
  const float* wt = weight_.data() + tile * taps * cin * kTile;
  const float* bt = bias_.data() + tile * kTile;
  const int32_t* begin = ev.begin.data();
  const int32_t* idx = ev.index.data();
  const float* val = ev.value.data();
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    const int64_t iy0 = oy * g.stride_h - g.pad_h;
    const int64_t ky0 = std::max<int64_t>(0, -iy0), ky1 = std::min<int64_t>(g.kernel_h, g.height - iy0);
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      const int64_t ix0 = ox * g.stride_w - g.pad_w;
      const int64_t x0 = std::max<int64_t>(0, ix0), x1 = std::min<int64_t>(g.width, ix0 + g.kernel_w);
      // Two accumulator chains (even and odd events of a window row) hide the FMA latency.
      Vec16 acc[kVecs], odd[kVecs];
      for (int k = 0; k < kVecs; ++k) acc[k] = odd[k] = Vec16{};
      for (int64_t ky = ky0; ky < ky1; ++ky) {
        const int64_t y = iy0 + ky;
        // Window row y, columns [x0, x1): one contiguous run of events. An event's tap is
        // (ky, x − ix0), so its weight row is at ((ky·kw − ix0)·cin + index)·kTile.
        const int64_t w0 = (ky * g.kernel_w - ix0) * cin * kTile;  // may be negative; w0 + index·kTile is not
        int64_t e = begin[y * g.width + x0];
        const int64_t end = begin[y * g.width + x1 - 1 + 1];
        for (; e + 2 <= end; e += 2) {
          const float* wa = wt + (w0 + int64_t(idx[e]) * kTile);
          const float* wb = wt + (w0 + int64_t(idx[e + 1]) * kTile);
          const float va = val[e], vb = val[e + 1];
#pragma GCC unroll 8
          for (int k = 0; k < kVecs; ++k) {
            acc[k] = fma16(acc[k], va, load16(wa + 16 * k));
            odd[k] = fma16(odd[k], vb, load16(wb + 16 * k));
          }
        }
        if (e < end) {
          const float* wa = wt + (w0 + int64_t(idx[e]) * kTile);
          for (int k = 0; k < kVecs; ++k) acc[k] = fma16(acc[k], val[e], load16(wa + 16 * k));
        }
      }
      float* dst = row + ox * kTile;
      for (int k = 0; k < kVecs; ++k) store16(dst + 16 * k, load16(bt + 16 * k) + (acc[k] + odd[k]));
    }
    // [out_x][tile channel] -> out[channel][oy][out_x]
    transpose_block(row, kTile, g.out_w, kTile, out + oy * g.out_w, out_hw);
  }
}

void EventConvolution::run(const float* x, int64_t n, float* out) const {
  const int64_t in_size = g_.input_size(), out_hw = g_.out_h * g_.out_w;
  const int64_t block = std::max<int64_t>(1, std::min<int64_t>(64, kBlockInputs / std::max<int64_t>(1, in_size)));
  const int64_t blocks = (n + block - 1) / block;
#pragma omp parallel
  {
    std::vector<SampleEvents> events(static_cast<size_t>(block));
    std::vector<float> row(static_cast<size_t>(g_.out_w * tile_));
    std::vector<float> staging;  // the last tile's channels when out_channels is not a multiple of tile_
#pragma omp for schedule(dynamic)
    for (int64_t bi = 0; bi < blocks; ++bi) {
      const int64_t s0 = bi * block, ns = std::min(block, n - s0);
      for (int64_t s = 0; s < ns; ++s) events[size_t(s)].build(x + (s0 + s) * in_size, g_, row_used_);
      for (int64_t tile = 0; tile < tiles_; ++tile) {
        const int64_t o0 = tile * tile_, valid = std::min(tile_, g_.out_channels - o0);
        for (int64_t s = 0; s < ns; ++s) {
          float* o = out + (s0 + s) * g_.output_size() + o0 * out_hw;
          float* dst = o;
          if (valid < tile_) {
            staging.resize(size_t(tile_ * out_hw));
            dst = staging.data();
          }
          switch (tile_) {
            case 128: run_tile<128>(events[size_t(s)], tile, row.data(), dst); break;
            case 64: run_tile<64>(events[size_t(s)], tile, row.data(), dst); break;
            case 32: run_tile<32>(events[size_t(s)], tile, row.data(), dst); break;
            default: run_tile<16>(events[size_t(s)], tile, row.data(), dst); break;
          }
          if (dst != o) std::memcpy(o, dst, size_t(valid * out_hw) * sizeof(float));
        }
      }
    }
  }
}

}  // namespace snn::cpu
