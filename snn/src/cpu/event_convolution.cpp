#include "snn/cpu/event_convolution.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "snn/cpu/transpose.hpp"
#include "snn/cpu/vec16.hpp"

namespace snn::cpu {

namespace {
// One kernel row of a weight block (one output-channel tile × one input-channel block) is kept to this
// size while the block's events are gathered from it. Larger blocks mean fewer, longer event runs (each
// run's end is a mispredicted branch); smaller ones stay in L1. Measured with bench/kernel_paths and
// engine_throughput: 24 KiB was best on the Intel VM of the first rounds, 48 KiB on the AMD Zen 5 VM of
// the fourth (bench/README.md).
constexpr int64_t kBlockBytes = 48 * 1024;
// Output partial sums of a band of output rows (one tile wide) are kept within this, in L2 with the
// kernel row being gathered from; each kernel row (and the tile's weights, over the band's passes) is
// then used by more outputs before the next is loaded. ResNet-18's tile weights (0.6-2.4 MB) do not
// stay in L2 between bands: 64 KiB bands and 512 KiB groups ran its layer3 convolution 10 % faster than
// 16 KiB and 192 KiB (bench/kernel_paths, AMD Zen 5 VM, eighth round of bench/README.md).
constexpr int64_t kBandBytes = 64 * 1024;
// Output partial sums of a group of samples gathered together (whole planes, one tile wide): in L2.
constexpr int64_t kGroupBytes = 512 * 1024;
// Inputs of the samples listed at once (a wave; their event lists take ~8 bytes per input, 32 MB here):
// bounds the memory of a layer whose input is large, and so the samples of a group. Each wave ends in
// a barrier: 1 Mi (5 of ResNet-18's layer1 samples per wave) was 3 % slower overall than 4 Mi.
constexpr int64_t kWaveInputs = int64_t(1) << 22;
// Positions ahead of the one being listed whose channels-last inputs are prefetched.
constexpr int64_t kPrefetchPositions = 4;
}  // namespace

// The non-zero inputs of one sample, by input-channel block: within a block, in position order
// (row-major) with channels ascending within a position, so the events of one block at positions x0..x1
// of one row are one contiguous run. An event is its value and x·block_channels + (channel − block's
// first), which, less the window's x0·block_channels, indexes the weight tap.
struct SampleEvents {
  // Not value-initialised (new T[n]): only the pages that events are written to are ever touched, ~a
  // fifth of the room at typical densities (first touches are what a sweep's first batch pays for).
  std::unique_ptr<int32_t[]> index;
  std::unique_ptr<float[]> value;
  size_t room_ = 0;
  std::vector<int32_t> begin;  // [block][position], plus the end

  // One pass: the sample is transposed to channels-last (into `channels_last`, scratch), then each
  // position's channels in a block are compressed to their non-zeros 16 at a time. Rows and columns no output reads (row_used[y] == 0 or
  // column_used[x] == 0, e.g. odd ones under a 1×1 stride-2 kernel) get no events, and unread rows are
  // not even transposed (for a strided 1×1 kernel the listing is most of the work).
  // A channels-last input (x_channels_last) is read as it is.
  void build(const float* x, bool x_channels_last, const ConvGeometry& g, int64_t block_channels,
             const std::vector<char>& row_used, const std::vector<char>& column_used,
             std::vector<float>& channels_last) {
    const int64_t positions = g.height * g.width, channels = g.in_channels;
    const int64_t blocks = (channels + block_channels - 1) / block_channels;
    begin.resize(size_t(blocks * positions + 1));
    // Room for every input plus one vector of slack: compressed vectors are stored whole.
    const size_t room = size_t(positions * channels + 16);
    if (room_ < room) {
      index.reset(new int32_t[room]);
      value.reset(new float[room]);
      room_ = room;
    }
    if (!x_channels_last && channels_last.size() < size_t(positions * channels))
      channels_last.resize(size_t(positions * channels));
    const float* const cl = x_channels_last ? x : channels_last.data();
    for (int64_t y0 = 0; y0 < g.height && !x_channels_last;) {  // runs of used rows, each transposed as one block
      if (!row_used[size_t(y0)]) {
        ++y0;
        continue;
      }
      int64_t y1 = y0 + 1;
      while (y1 < g.height && row_used[size_t(y1)]) ++y1;
      transpose_block(x + y0 * g.width, positions, channels, (y1 - y0) * g.width,
                      channels_last.data() + y0 * g.width * channels, channels);
      y0 = y1;
    }
    int32_t* idx = index.get();
    float* val = value.get();
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
          const float* v = cl + p * channels + c0;
          // A channels-last input is read here straight from memory, by a loop whose stores depend on
          // each other's counts (k): the lines of a position a few ahead are requested early.
          if (x_channels_last)
            for (int64_t c = 0; c < cn; c += 16) __builtin_prefetch(v + kPrefetchPositions * channels + c);
          const int32_t base = int32_t((p - p0) * block_channels);  // x·block_channels
          int64_t c = 0;
#if defined(__AVX512F__)
          const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
          for (; c < cn; c += 16) {
            const __mmask16 in = cn - c >= 16 ? __mmask16(0xffff) : __mmask16((1u << (cn - c)) - 1);
            const __m512 xv = _mm512_maskz_loadu_ps(in, v + c);
            const __mmask16 nz = _mm512_mask_cmp_ps_mask(in, xv, _mm512_setzero_ps(), _CMP_NEQ_UQ);
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
  // Tiles of 128 where they divide the output channels: twice the work per run of events (each run's
  // end is a mispredicted branch) over the same input-channel blocks as tiles of 64, whose kernel row
  // then takes twice kBlockBytes (L2). ResNet-18's layers 2-4 ran 12 % faster (bench/README.md, seventh
  // round); where 128 does not divide, the padding would cost more than that.
  if (g.out_channels % 128 == 0) tile_ = 128;
  tiles_ = (g.out_channels + tile_ - 1) / tile_;
  // All input channels in one block where that fits kBlockBytes (per 64 channels of the tile); otherwise
  // blocks of a multiple of 16 (the compress width), at least 16.
  const int64_t block_bytes = kBlockBytes * std::max<int64_t>(1, tile_ / 64);
  const int64_t fit = block_bytes / (g.kernel_w * tile_ * int64_t(sizeof(float)));
  block_channels_ = g.in_channels <= fit ? g.in_channels : std::max<int64_t>(16, fit / 16 * 16);
  blocks_ = (g.in_channels + block_channels_ - 1) / block_channels_;
  // Samples whose whole output planes fit kGroupBytes are gathered together (the band is all their
  // rows), so a weight block is used by all of them while it is close; larger planes go in bands of rows.
  const int64_t plane_bytes = g.out_h * g.out_w * tile_ * int64_t(sizeof(float));
  group_samples_ = std::clamp<int64_t>(std::min(kGroupBytes / plane_bytes, kWaveInputs / std::max<int64_t>(1, g.input_size())),
                                       1, 64);
  band_rows_ = group_samples_ > 1 ? g.out_h
                                  : std::clamp<int64_t>(kBandBytes / (g.out_w * tile_ * int64_t(sizeof(float))), 1, g.out_h);
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
  // Written in that order, a weight row (tile channels) at a time, blocks in parallel: prepare() is part
  // of a sweep's time, and scattered single-float writes took ~0.1 s for ResNet-18.
  const int64_t bc = block_channels_;
  weight_.resize(size_t(tiles_ * blocks_ * taps * bc * tile_));
  bias_.assign(size_t(tiles_ * tile_), 0.0f);
  for (int64_t o = 0; o < g.out_channels; ++o)
    if (bias) bias_[size_t(o)] = bias[o];
#pragma omp parallel for schedule(dynamic)
  for (int64_t tb = 0; tb < tiles_ * blocks_; ++tb) {
    const int64_t tile = tb / blocks_, b = tb % blocks_;
    float* dst = weight_.data() + tb * taps * bc * tile_;
    for (int64_t k = 0; k < taps; ++k)
      for (int64_t cl = 0; cl < bc; ++cl, dst += tile_) {
        const int64_t c = b * bc + cl;
        for (int64_t j = 0; j < tile_; ++j) {
          const int64_t o = tile * tile_ + j;
          dst[j] = o < g.out_channels && c < g.in_channels ? weight[(o * g.in_channels + c) * taps + k] : 0.0f;
        }
      }
  }
}

template <int kTile>
void EventConvolution::run_tile(const SampleEvents* ev, int64_t ns, int64_t tile, int64_t oy_begin, int64_t oy_end,
                                float* band, float* const* out, int64_t valid, bool out_channels_last) const {
  constexpr int kVecs = kTile / 16;
  const ConvGeometry& g = g_;
  const int64_t bc = block_channels_, taps = g.kernel_h * g.kernel_w, out_hw = g.out_h * g.out_w;
  const int64_t positions = g.height * g.width;
  const float* bt = bias_.data() + tile * kTile;
  Vec16 bias[kVecs];
  for (int k = 0; k < kVecs; ++k) bias[k] = load16(bt + 16 * k);
  for (int64_t oy0 = oy_begin; oy0 < oy_end; oy0 += band_rows_) {
    const int64_t rows = std::min(band_rows_, oy_end - oy0), band_size = rows * g.out_w * kTile;
    for (int64_t p = 0; p < ns * rows * g.out_w; ++p)
      for (int k = 0; k < kVecs; ++k) store16(band + p * kTile + 16 * k, bias[k]);
    for (int64_t b = 0; b < blocks_; ++b) {
      const float* wt = weight_.data() + (tile * blocks_ + b) * taps * bc * kTile;
      // One kernel row at a time: its weights (kernel_w · block channels · tile) stay close while every
      // sample's band gathers its window row from them.
      for (int64_t ky = 0; ky < g.kernel_h; ++ky) {
        for (int64_t s = 0; s < ns; ++s) {
          const int32_t* idx = ev[s].index.get();
          const float* val = ev[s].value.get();
          const int32_t* begin = ev[s].begin.data() + b * positions;
          float* sample_band = band + s * band_size;
          for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
            const int64_t y = oy * g.stride_h - g.pad_h + ky;
            if (y < 0 || y >= g.height) continue;
            float* partial = sample_band + (oy - oy0) * g.out_w * kTile;
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
              // Pairs of events; an odd run's last pair repeats its first event with value 0 (no branch
              // on the run's parity, which is data and mispredicts half the time).
              for (; e < end; e += 2) {
                const int64_t more = int64_t(e + 1 < end), eb = e + more;  // arithmetic, not a branch
                const float* wa = wt + (w0 + int64_t(idx[e]) * kTile);
                const float* wb = wt + (w0 + int64_t(idx[eb]) * kTile);
                const float va = val[e], vb = val[eb] * float(more);
#pragma GCC unroll 8
                for (int k = 0; k < kVecs; ++k) {
                  acc[k] = fma16(acc[k], va, load16(wa + 16 * k));
                  odd[k] = fma16(odd[k], vb, load16(wb + 16 * k));
                }
              }
              for (int k = 0; k < kVecs; ++k) store16(dst + 16 * k, acc[k] + odd[k]);
            }
          }
        }
      }
    }
    // [band position][tile channel] -> out[channel][oy0 + ...] (or, channels-last, out[oy0 + ...][channel]),
    // the tile's valid channels only
    for (int64_t s = 0; s < ns; ++s) {
      const float* src = band + s * band_size;
      if (out_channels_last) {
        float* dst = out[s] + oy0 * g.out_w * g.out_channels;
        if (valid == kTile && g.out_channels == kTile) {  // the band is the output rows as they are
          std::copy(src, src + band_size, dst);
        } else {
          for (int64_t q = 0; q < rows * g.out_w; ++q)
            for (int k = 0; k < kVecs; ++k)
              if (16 * k + 16 <= valid) store16(dst + q * g.out_channels + 16 * k, load16(src + q * kTile + 16 * k));
              else if (16 * k < valid) std::copy(src + q * kTile + 16 * k, src + q * kTile + valid, dst + q * g.out_channels + 16 * k);
        }
      } else {
        transpose_block(src, kTile, rows * g.out_w, valid, out[s] + oy0 * g.out_w, out_hw);
      }
    }
  }
}

int64_t EventConvolution::wave_samples(int64_t n) const {
  return std::clamp<int64_t>(kWaveInputs / std::max<int64_t>(1, g_.input_size()), 1, std::max<int64_t>(1, n));
}

void EventConvolution::run(const float* x, int64_t n, float* out, bool input_channels_last,
                           bool output_channels_last) const {
  const int64_t in_size = g_.input_size(), out_hw = g_.out_h * g_.out_w;
  const int64_t threads = omp_get_max_threads();
  const int64_t bands = (g_.out_h + band_rows_ - 1) / band_rows_;
  // Samples go in waves of at most kWaveInputs inputs. A wave's work items, (group of samples, tile, chunk
  // of output rows), run in parallel, at least 4 per thread where the samples allow, so that samples of
  // unequal density do not leave a thread idle (a thread per group of samples left the other idle for
  // ~8 % of ResNet-18's event convolutions); each item lists the samples it needs that no one has yet.
  const int64_t wave = wave_samples(n);
  thread_local std::vector<SampleEvents> events;  // the calling thread's, shared with its team
  if (events.size() < size_t(wave)) events.resize(size_t(wave));
  SampleEvents* ev = events.data();
  for (int64_t w0 = 0; w0 < n; w0 += wave) {
    const int64_t wn = std::min(wave, n - w0);
    // Groups first (a weight block serves a group's samples), then contiguous chunks of bands (adjacent
    // chunks share a cache line of output at most).
    const int64_t want = 4 * threads;
    const int64_t want_groups = std::max<int64_t>(1, (want + tiles_ - 1) / tiles_);
    const int64_t group = std::clamp<int64_t>((wn + want_groups - 1) / want_groups, 1, group_samples_);
    const int64_t groups = (wn + group - 1) / group;
    const int64_t chunks = std::clamp<int64_t>((want + groups * tiles_ - 1) / (groups * tiles_), 1, bands);
    const int64_t chunk_rows = (bands + chunks - 1) / chunks * band_rows_;
    const int64_t items = groups * tiles_ * chunks;
    std::vector<std::atomic<uint8_t>> claimed(static_cast<size_t>(wn)), listed(claimed.size());
    for (size_t s = 0; s < claimed.size(); ++s) claimed[s].store(0), listed[s].store(0);
    std::atomic<int64_t> next_unlisted{0};
#pragma omp parallel
    {
      thread_local std::vector<float> channels_last;
      thread_local AlignedVector<float> band;
      thread_local std::vector<float*> outs;
      const size_t band_size = size_t(group * band_rows_ * g_.out_w * tile_);
      if (band.size() < band_size) band.resize(band_size);
      outs.resize(size_t(group));
      // A sample is listed by the first thread that needs it (or that waits for another's and helps);
      // no barrier between listing and gathering, where a thread would idle.
      auto list = [&](int64_t s) {
        if (claimed[size_t(s)].exchange(1, std::memory_order_acq_rel)) return false;
        ev[s].build(x + (w0 + s) * in_size, input_channels_last, g_, block_channels_, row_used_, column_used_,
                    channels_last);
        listed[size_t(s)].store(1, std::memory_order_release);
        return true;
      };
#pragma omp for schedule(dynamic)
      for (int64_t item = 0; item < items; ++item) {
        const int64_t tile = item / (groups * chunks), gi = item / chunks % groups, ci = item % chunks;
        const int64_t s0 = gi * group, ns = std::min(group, wn - s0);
        for (int64_t s = s0; s < s0 + ns; ++s) list(s);
        for (int64_t s = s0; s < s0 + ns; ++s)
          while (!listed[size_t(s)].load(std::memory_order_acquire)) {
            const int64_t other = next_unlisted.fetch_add(1, std::memory_order_relaxed);
            if (other >= wn || !list(other)) std::this_thread::yield();
          }
        const int64_t o0 = tile * tile_, valid = std::min(tile_, g_.out_channels - o0);
        const int64_t oy0 = ci * chunk_rows, oy1 = std::min(g_.out_h, oy0 + chunk_rows);
        if (oy0 >= oy1) continue;
        const int64_t first = output_channels_last ? o0 : o0 * out_hw;  // the tile's first output
        for (int64_t s = 0; s < ns; ++s) outs[size_t(s)] = out + (w0 + s0 + s) * g_.output_size() + first;
        const bool cl = output_channels_last;
        switch (tile_) {
          case 128: run_tile<128>(ev + s0, ns, tile, oy0, oy1, band.data(), outs.data(), valid, cl); break;
          case 64: run_tile<64>(ev + s0, ns, tile, oy0, oy1, band.data(), outs.data(), valid, cl); break;
          case 32: run_tile<32>(ev + s0, ns, tile, oy0, oy1, band.data(), outs.data(), valid, cl); break;
          default: run_tile<16>(ev + s0, ns, tile, oy0, oy1, band.data(), outs.data(), valid, cl); break;
        }
      }
    }
  }
}

}  // namespace snn::cpu
