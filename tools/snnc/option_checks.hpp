// Range checks for snnc's options, in its own words: "--T must be at least 1, got 0" (CLI11's own
// validators print "Value 0 not in range 0.000000 to 1797693…" and exit 105). CLI11 puts the option's
// name in front; main.cpp turns every parse error into "snnc: error: …" and exit status 1.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace snnc {

// A whole number in [lo, hi].
CLI::Validator whole_in(int64_t lo, int64_t hi);
// A whole number >= lo.
CLI::Validator whole_at_least(int64_t lo);
// A finite real in [lo, hi]; open_lo excludes lo itself ("must be greater than 0").
CLI::Validator real_in(double lo, double hi, bool open_lo = false);

// The most --threads snnc accepts: 8 threads per core of this machine (more only thrash, and at some
// point the OpenMP runtime cannot create them).
int max_threads();

// Largest --T: beyond it a sweep runs for days; accuracy is reported for every t <= T anyway.
constexpr int64_t kMaxTimesteps = 100000;

}  // namespace snnc
