// Strict option parsing shared by the C++ benchmarks: a value that is not entirely a number, or below
// its minimum, is an error naming the option.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace snn::bench {

inline int64_t parse_int(const std::string& opt, const std::string& v, int64_t min) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::runtime_error(opt + ": not an integer: '" + v + "'");
  if (x < min) throw std::runtime_error(opt + " must be at least " + std::to_string(min) + ", got " + v);
  return x;
}

inline double parse_double(const std::string& opt, const std::string& v) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size()) throw std::runtime_error(opt + ": not a number: '" + v + "'");
  return x;
}

}  // namespace snn::bench
