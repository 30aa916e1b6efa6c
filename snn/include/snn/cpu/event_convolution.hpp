// Event-driven convolution on the CPU: work proportional to the non-zero inputs (spikes, pooled spikes).
//
// A non-zero input value v at (c, y, x) contributes v·W[:, c, ky, kx] to every output whose window
// holds it. The kernel gathers: the non-zero inputs of a sample are listed once per input-channel block,
// in position order (channels ascending within a position), so each row of an output's window is one
// contiguous run of a block's events; per output position it walks those runs and adds v times the
// contiguous weight row W[ky][kx][c][co-tile] into accumulators held in registers (two chains, to hide
// the FMA latency). Each run's end costs a mispredicted branch and its accumulators' load and store,
// so tiles are as wide as the output channels allow (16 to 128). Weights are stored transposed in
// blocks of (output-channel tile × input-channel block), sized so that one kernel row of a block stays
// close while the outputs gather from it (weight loads bound this kernel). Samples whose output planes are small (deep layers) are gathered together,
// so that a block serves all their planes before the next is loaded; larger planes are done in bands of
// output rows whose partial sums stay in L2 across blocks and kernel rows. Each band is transposed back
// into the NCHW output (or copied, for a channels-last output; a channels-last input is listed without
// its transpose).
//
// Summation order per output: bias, then per input-channel block and per kernel row in order, that
// window row's events alternately into two chains (chain 0 starting from the running sum, chain 1 from
// zero; a run of odd length adds 0·w to chain 1 last, which changes nothing), then chain 0 + chain 1;
// deterministic and independent of threads and of how samples are grouped, but not the dense GEMM's
// order, and fused multiply-adds where the machine has them (vec16.hpp): results differ from the dense
// path by rounding. Linear layers have their own event kernel (event_linear.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "snn/cpu/aligned_vector.hpp"

namespace snn::cpu {

struct ConvGeometry {
  int64_t in_channels = 0, height = 1, width = 1;
  int64_t out_channels = 0, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t out_h = 1, out_w = 1;

  int64_t input_size() const { return in_channels * height * width; }
  int64_t output_size() const { return out_channels * out_h * out_w; }
  // Dense multiply-accumulates per sample (the ANN's MACs).
  int64_t macs() const { return out_channels * out_h * out_w * in_channels * kernel_h * kernel_w; }
};

struct SampleEvents;  // event_convolution.cpp

class EventConvolution {
 public:
  // weight [out_channels][in_channels][kernel_h][kernel_w] (groups = 1); bias [out_channels] or null.
  EventConvolution(const ConvGeometry& g, const float* weight, const float* bias);

  // x: n samples of [in_channels, height, width]; out: n samples of [out_channels, out_h, out_w]; either
  // channels-last ([height, width, in_channels], [out_h, out_w, out_channels]) where the flag says so
  // (the same sums: only their order in memory differs). Parallel (the calling OpenMP team size) over
  // samples to list their events, then over work items: groups of samples × output-channel tiles ×
  // chunks of output rows.
  void run(const float* x, int64_t n, float* out, bool input_channels_last = false,
           bool output_channels_last = false) const;

  const ConvGeometry& geometry() const { return g_; }
  int64_t tile_channels() const { return tile_; }
  // The work plan, for tests: input-channel blocks, samples gathered together, output rows per band.
  int64_t blocks() const { return blocks_; }
  int64_t group_samples() const { return group_samples_; }
  int64_t band_rows() const { return band_rows_; }
  // Samples listed at once by run() on n samples (bounded by their inputs: the event lists' memory).
  int64_t wave_samples(int64_t n) const;

 private:
  template <int kTile>
  void run_tile(const SampleEvents* ev, int64_t ns, int64_t tile, int64_t oy_begin, int64_t oy_end, float* band,
                float* const* out, int64_t valid, bool out_channels_last) const;

  ConvGeometry g_;
  int64_t tile_ = 16;   // output channels per tile: 16, 32, 64 or 128
  int64_t tiles_ = 1;
  int64_t block_channels_ = 1;  // input channels per weight block (all of them where they fit)
  int64_t blocks_ = 1;
  int64_t group_samples_ = 1;   // samples gathered together (whole output planes; 1: bands of rows)
  int64_t band_rows_ = 1;       // output rows whose partial sums are kept across the blocks
  AlignedVector<float> weight_;  // [tile][block][kernel_h][kernel_w][block_channels_][tile_], zero-padded
  AlignedVector<float> bias_;    // [tiles_ · tile_], zero-padded
  std::vector<char> row_used_;     // per input row: read by some output (a stride beyond the kernel skips rows)
  std::vector<char> column_used_;  // per input column: the same
};

}  // namespace snn::cpu
