// Range checks for snnc's options, in its own words: "--T must be at least 1, got 0" (CLI11's own
// validators print "Value 0 not in range 0.000000 to 1797693…" and exit 105). CLI11 puts the option's
// name in front; main.cpp turns every parse error into "snnc: error: …" and exit status 1. The ranges and
// their wording are the library's (snn/limits.hpp), so Python and C++ callers get the same errors.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "snn/limits.hpp"

namespace snnc {

// A whole number in [lo, hi].
CLI::Validator whole_in(int64_t lo, int64_t hi);
CLI::Validator whole_in(const snn::WholeRange& r);
// A whole number >= lo.
CLI::Validator whole_at_least(int64_t lo);
// A finite real in [lo, hi]; open_lo excludes lo itself ("must be greater than 0").
CLI::Validator real_in(double lo, double hi, bool open_lo = false);
CLI::Validator real_in(const snn::RealRange& r);

// The most --threads snnc accepts (snn::max_threads: 8 per core of this machine).
using snn::max_threads;
// Largest --T (snn::kMaxTimesteps).
using snn::kMaxTimesteps;

}  // namespace snnc
