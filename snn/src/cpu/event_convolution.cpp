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
// A weight block (one output-channel tile × one input-channel block, all taps) is kept to this size so
// that it stays close (L1/L2) while the block's events are gathered; whole tiles of many input channels
// (ResNet-18's 256–512) streamed the weights from L2 or beyond. Measured with bench/kernel_paths on the
// ResNet-18 layers (machine too noisy to separate 80 from 160 KiB; 36 KiB, 16-channel blocks, lost to
// the shorter event runs it makes).
constexpr int64_t kBlockBytes = 24 * 1024;
// Output partial sums of a band of output rows (one tile wide) are kept within this, also in L1.
constexpr int64_t kBandBytes = 16 * 1024;
// Input floats per block of samples whose events are listed together (and share each weight tile's
// trip through L2).
constexpr int64_t kBlockInputs = int64_t(1) << 16;
}  // namespace

// The non-zero inputs of one sample, by input-channel block: within a block, in position order
// (row-major) with channels ascending within a position, so the events of one block at positions x0..x1
// of one row are one contiguous run. An event is its value and x·block_channels + (channel − block's
// first), which, less the window's x0·block_channels, indexes the weight tap.
struct SampleEvents {
  std::vector<int32_t> index;
  std::vector<float> value;
  std::vector<int32_t> begin;  // [block][position], plus the end

  // One pass: the sample is transposed to channels-last, then each position's channels in a block are
  // compressed to their non-zeros 16 at a time. Rows and columns no output reads (row_used[y] == 0 or
  // column_used[x] == 0, e.g. odd ones under a 1×1 stride-2 kernel) get no events, and unread rows are
  // not even transposed (for a strided 1×1 kernel the listing is most of the work).
  void build(const float* x, const ConvGeometry& g, int64_t block_channels, const std::vector<char>& row_used,
             const std::vector<char>& column_used) {
    const int64_t positions = g.height * g.width, channels = g.in_channels;
    const int64_t blocks = (channels + block_channels - 1) / block_channels;
    begin.resize(size_t(blocks * positions + 1));
    // Room for every input plus one vector of slack: compressed vectors are stored whole.
    const size_t room = size_t(positions * channels + 16);
    if (index.size() < room) {
      index.resize(room);
      value.resize(room);
    }
    if (channels_last_.size() < size_t(positions * channels)) channels_last_.resize(size_t(positions * channels));
    for (int64_t y0 = 0; y0 < g.height;) {  // runs of used rows, each transposed as one block
      if (!row_used[size_t(y0)]) {
        ++y0;
        continue;
      }
      int64_t y1 = y0 + 1;
      while (y1 < g.height && row_used[size_t(y1)]) ++y1;
      transpose_block(x + y0 * g.width, positions, channels, (y1 - y0) * g.width,
                      channels_last_.data() + y0 * g.width * channels, channels);
      y0 = y1;
    }
    int32_t* idx = index.data();
    float* val = value.data();
    int32_t k = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * block_channels, cn = std::min(block_channels, channels - c0);
      int32_t* bb = begin.data() + b * positions;
      for (int64_t y = 0; y < g.height; ++y) {
        const int64_t p0 = y * g.width;
        if (!row_used[size_t(y)]) {
          for (int64_t p = p0; p < p0 + g.width; ++p) bb[p] = k;
          continue;
        }
        for (int64_t p = p0; p < p0 + g.width; ++p) {
          bb[p] = k;
          if (!column_used[size_t(p - p0)]) continue;
          const float* v = channels_last_.data() + p * channels + c0;
          const int32_t base = int32_t((p - p0) * block_channels);  // x·block_channels
          int64_t c = 0;
#if defined(__AVX512F__)
          const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
          for (; c < cn; c += 16) {
            const __mmask16 in = cn - c >= 16 ? __mmask16(0xffff) : __mmask16((1u << (cn - c)) - 1);
            const __m512 xv = _mm512_maskz_loadu_ps(in, v + c);
            const __mmask16 nz = _mm512_mask_cmp_ps_mask(in, xv, _mm512_setzero_ps(), _CMP_NEQ_UQ);
            if (!nz) continue;
            const __m512i iv = _mm512_add_epi32(lanes, _mm512_set1_epi32(base + int32_t(c)));
            _mm512_storeu_ps(val + k, _mm512_maskz_compress_ps(nz, xv));
            _mm512_storeu_si512(idx + k, _mm512_maskz_compress_epi32(nz, iv));
            k += __builtin_popcount(nz);
          }
#endif
          for (; c < cn; ++c)
            if (v[c] != 0.0f) {
              idx[k] = base + int32_t(c);
              val[k++] = v[c];
            }
        }
      }
    }
    begin[size_t(blocks * positions)] = k;
  }

 private:
  std::vector<float> channels_last_;  // the sample as [position][channel]
};

EventConvolution::EventConvolution(const ConvGeometry& g, const float* weight, const float* bias) : g_(g) {
  const int64_t taps = g.kernel_h * g.kernel_w;
  tile_ = 16;
  for (int64_t t : {64, 32}) {
    if (t <= (g.out_channels + 15) / 16 * 16) {
      tile_ = t;
      break;
    }
  }
  tiles_ = (g.out_channels + tile_ - 1) / tile_;
  // All input channels in one block where that fits kBlockBytes; otherwise blocks of a multiple of 16
  // (the compress width), at least 16.
  const int64_t fit = kBlockBytes / (g.kernel_w * tile_ * int64_t(sizeof(float)));
  block_channels_ = g.in_channels <= fit ? g.in_channels : std::max<int64_t>(16, fit / 16 * 16);
  blocks_ = (g.in_channels + block_channels_ - 1) / block_channels_;
  band_rows_ = std::clamp<int64_t>(kBandBytes / (g.out_w * tile_ * int64_t(sizeof(float))), 1, g.out_h);
  row_used_.assign(size_t(g.height), 0);
  for (int64_t oy = 0; oy < g.out_h; ++oy)
    for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
      const int64_t y = oy * g.stride_h - g.pad_h + ky;
      if (y >= 0 && y < g.height) row_used_[size_t(y)] = 1;
    }
  column_used_.assign(size_t(g.width), 0);
  for (int64_t ox = 0; ox < g.out_w; ++ox)
    for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
      const int64_t x = ox * g.stride_w - g.pad_w + kx;
      if (x >= 0 && x < g.width) column_used_[size_t(x)] = 1;
    }
  // [tile][block][ky][kx][block channel][tile channel], zero-padded in both channel dimensions.
  const int64_t bc = block_channels_;
  weight_.assign(size_t(tiles_ * blocks_ * taps * bc * tile_), 0.0f);
  bias_.assign(size_t(tiles_ * tile_), 0.0f);
  for (int64_t o = 0; o < g.out_channels; ++o) {
    const int64_t tile = o / tile_, j = o % tile_;
    if (bias) bias_[size_t(o)] = bias[o];
    for (int64_t c = 0; c < g.in_channels; ++c)
      for (int64_t k = 0; k < taps; ++k)
        weight_[size_t((((tile * blocks_ + c / bc) * taps + k) * bc + c % bc) * tile_ + j)] =
            weight[(o * g.in_channels + c) * taps + k];
  }
}

template <int kTile>
void EventConvolution::run_tile(const SampleEvents& ev, int64_t tile, float* band, float* out) const {
  constexpr int kVecs = kTile / 16;
  const ConvGeometry& g = g_;
  const int64_t bc = block_channels_, taps = g.kernel_h * g.kernel_w, out_hw = g.out_h * g.out_w;
  const int64_t positions = g.height * g.width;
  const float* bt = bias_.data() + tile * kTile;
  const int32_t* idx = ev.index.data();
  const float* val = ev.value.data();
  Vec16 bias[kVecs];
  for (int k = 0; k < kVecs; ++k) bias[k] = load16(bt + 16 * k);
  for (int64_t oy0 = 0; oy0 < g.out_h; oy0 += band_rows_) {
    const int64_t rows = std::min(band_rows_, g.out_h - oy0);
    for (int64_t p = 0; p < rows * g.out_w; ++p)
      for (int k = 0; k < kVecs; ++k) store16(band + p * kTile + 16 * k, bias[k]);
    for (int64_t b = 0; b < blocks_; ++b) {
      const float* wt = weight_.data() + (tile * blocks_ + b) * taps * bc * kTile;
      const int32_t* begin = ev.begin.data() + b * positions;
      // One kernel row at a time: its weights (kernel_w · block channels · tile) stay in L1 while the
      // band's outputs gather their window row from it.
      for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
        for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
          const int64_t y = oy * g.stride_h - g.pad_h + ky;
          if (y < 0 || y >= g.height) continue;
          float* partial = band + (oy - oy0) * g.out_w * kTile;
          const int32_t* row_begin = begin + y * g.width;
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            const int64_t ix0 = ox * g.stride_w - g.pad_w;
            const int64_t x0 = std::max<int64_t>(0, ix0), x1 = std::min<int64_t>(g.width, ix0 + g.kernel_w);
            int64_t e = row_begin[x0];
            const int64_t end = row_begin[x1];  // the next position's start (or the next row's)
            if (e == end) continue;
            // Window row y, columns [x0, x1): one contiguous run of the block's events. An event's tap
            // is (ky, x − ix0), so its weight row is at ((ky·kw − ix0)·bc + index)·kTile. Two
            // accumulator chains (even and odd events) hide the FMA latency.
            const int64_t w0 = (ky * g.kernel_w - ix0) * bc * kTile;  // may be negative; w0 + index·kTile is not
            float* dst = partial + ox * kTile;
            Vec16 acc[kVecs], odd[kVecs];
            for (int k = 0; k < kVecs; ++k) {
              acc[k] = load16(dst + 16 * k);
              odd[k] = Vec16{};
            }
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
            for (int k = 0; k < kVecs; ++k) store16(dst + 16 * k, acc[k] + odd[k]);
          }
        }
      }
    }
    // [band position][tile channel] -> out[channel][oy0 + ...]
    transpose_block(band, kTile, rows * g.out_w, kTile, out + oy0 * g.out_w, out_hw);
  }
}

void EventConvolution::run(const float* x, int64_t n, float* out) const {
  const int64_t in_size = g_.input_size(), out_hw = g_.out_h * g_.out_w;
  const int64_t block = std::max<int64_t>(1, std::min<int64_t>(64, kBlockInputs / std::max<int64_t>(1, in_size)));
  const int64_t blocks = (n + block - 1) / block;
#pragma omp parallel
  {
    // Buffers per thread, kept across calls and layers (the team's threads persist) and only ever
    // grown: no allocation, page faults or zero-fill per call.
    thread_local std::vector<SampleEvents> events;
    thread_local AlignedVector<float> band, staging;  // staging: the last tile when out_channels % tile_ != 0
    if (events.size() < size_t(block)) events.resize(size_t(block));
    if (band.size() < size_t(band_rows_ * g_.out_w * tile_)) band.resize(size_t(band_rows_ * g_.out_w * tile_));
#pragma omp for schedule(dynamic)
    for (int64_t bi = 0; bi < blocks; ++bi) {
      const int64_t s0 = bi * block, ns = std::min(block, n - s0);
      for (int64_t s = 0; s < ns; ++s)
        events[size_t(s)].build(x + (s0 + s) * in_size, g_, block_channels_, row_used_, column_used_);
      for (int64_t tile = 0; tile < tiles_; ++tile) {
        const int64_t o0 = tile * tile_, valid = std::min(tile_, g_.out_channels - o0);
        for (int64_t s = 0; s < ns; ++s) {
          float* o = out + (s0 + s) * g_.output_size() + o0 * out_hw;
          float* dst = o;
          if (valid < tile_) {
            if (staging.size() < size_t(tile_ * out_hw)) staging.resize(size_t(tile_ * out_hw));
            dst = staging.data();
          }
          switch (tile_) {
            case 64: run_tile<64>(events[size_t(s)], tile, band.data(), dst); break;
            case 32: run_tile<32>(events[size_t(s)], tile, band.data(), dst); break;
            default: run_tile<16>(events[size_t(s)], tile, band.data(), dst); break;
          }
          if (dst != o) std::memcpy(o, dst, size_t(valid * out_hw) * sizeof(float));
        }
      }
    }
  }
}

}  // namespace snn::cpu
