// The limits of snnc's parameters, in one place for every front end: the CLI (its option validators), the
// Python bindings and the C++ entry points (make_backend, run_sweep, calibration) check the same ranges
// with the same words, so one input gets one error whichever door it comes through. Each front end gives
// the parameter's name as its users spell it ("--threads" on the CLI, "threads" in Python).
#pragma once
#include <cstdint>
#include <string>

namespace snn {

// A whole number in [lo, hi].
struct WholeRange {
  int64_t lo, hi;
};
// A finite real in [lo, hi]; open_lo excludes lo itself ("must be greater than 0").
struct RealRange {
  double lo, hi;
  bool open_lo = false;
};

// Largest T: beyond it a sweep runs for days; accuracy is reported for every t <= T anyway.
constexpr int64_t kMaxTimesteps = 100000;
// Largest batch size, calibration batch count and pass count: more is a typo, not a plan.
constexpr int64_t kMaxCount = int64_t{1} << 20;

namespace limits {
constexpr WholeRange kTimesteps{1, kMaxTimesteps};
constexpr WholeRange kBatchSize{1, kMaxCount};
constexpr WholeRange kImageLimit{0, int64_t{1} << 53};  // 0: all images
constexpr WholeRange kCalibrationBatches{1, kMaxCount};
constexpr WholeRange kCalibrationIters{1, kMaxCount};
constexpr RealRange kAlpha{0.0, 1e6, true};
// Conversion (snnc convert / snnc.convert).
constexpr WholeRange kNormTimesteps{1, kMaxCount};
constexpr RealRange kPercentile{0.0, 100.0, true};
constexpr RealRange kMean{-1e6, 1e6};
constexpr RealRange kStd{0.0, 1e6, true};
constexpr WholeRange kInputExtent{1, kMaxCount};
constexpr RealRange kBeta{0.0, 1.0, true};
constexpr RealRange kVInit{0.0, 1.0};
constexpr RealRange kCheckTolerance{0.0, 1e6};
constexpr RealRange kCheckMoved{0.0, 1.0};
constexpr WholeRange kCheckImages{1, 4096};
// CPU threads: 0 (all cores) up to max_threads().
WholeRange threads();
}  // namespace limits

// The most threads snnc accepts: 8 per core of this machine (more only thrash, and at some point the
// OpenMP runtime cannot create them: 100000 crashed inside libgomp).
int max_threads();

// What is wrong with v for the range, as the end of a sentence ("must be at least 1, got 0"), or "" when
// it is in range. `text` is v as the user wrote it, when that differs from its shortest spelling.
std::string range_problem(double v, const WholeRange& r, const std::string& text = "");
std::string range_problem(double v, const RealRange& r, const std::string& text = "");

// Throw snn::Error("<name> must be ..., got v") when v is out of range.
void check_range(int64_t v, const WholeRange& r, const std::string& name);
void check_range(double v, const RealRange& r, const std::string& name);

// A seed: a whole number in [0, 2^64 - 1], written in decimal. Anything else (-1, 2^64, 1e23, 0x10)
// throws snn::Error naming the parameter; nothing is clamped or wrapped.
uint64_t parse_seed(const std::string& text, const std::string& name);

}  // namespace snn
