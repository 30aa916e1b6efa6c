// Event-driven linear layer on the CPU: out[n] = bias + Σ over the non-zero inputs x[n][i] of
// x[n][i]·W[:, i], with W stored transposed ([in][out], in output tiles sized for L2) so each event adds
// one contiguous row. Two accumulator chains per output tile (even and odd events) hide the FMA latency;
// the order is fixed (bias + (even + odd)), so results do not depend on threads.
#pragma once
#include <cstdint>
#include <vector>

#include "snn/cpu/aligned_vector.hpp"

namespace snn::cpu {

class EventLinear {
 public:
  // weight [out_features][in_features]; bias [out_features] or null.
  EventLinear(int64_t in_features, int64_t out_features, const float* weight, const float* bias);

  // x: n samples of in_features; out: n samples of out_features. Parallel over blocks of samples.
  void run(const float* x, int64_t n, float* out) const;

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  struct Event {
    int32_t weight_offset;  // input index · tile
    float value;
  };
  template <int kTile>
  void run_tile(const Event* begin, const Event* end, int64_t tile, float* out) const;

  int64_t in_, out_;
  int64_t tile_ = 16, tiles_ = 1;
  AlignedVector<float> weight_;  // [tile][in][tile_], zero-padded
  AlignedVector<float> bias_;    // [tiles_ · tile_], zero-padded
};

}  // namespace snn::cpu
