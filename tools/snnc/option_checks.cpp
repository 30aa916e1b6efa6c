#include "option_checks.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace snnc {

namespace {

std::string text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Parses the whole string as a number; false when it is not one.
bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

}  // namespace

CLI::Validator whole_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        double v = 0;
        if (!parse_number(s, &v) || !std::isfinite(v) || v != std::floor(v)) return "must be a whole number, got '" + s + "'";
        if (v < double(lo)) return "must be at least " + std::to_string(lo) + ", got " + s;
        if (v > double(hi)) return "must be at most " + std::to_string(hi) + ", got " + s;
        return {};
      },
      "", "whole_in");
}

CLI::Validator whole_at_least(int64_t lo) { return whole_in(lo, INT64_C(1) << 53); }

CLI::Validator real_in(double lo, double hi, bool open_lo) {
  return CLI::Validator(
      [lo, hi, open_lo](std::string& s) -> std::string {
        double v = 0;
        if (!parse_number(s, &v) || std::isnan(v)) return "must be a number, got '" + s + "'";
        if (open_lo ? !(v > lo) : !(v >= lo))
          return std::string("must be ") + (open_lo ? "greater than " : "at least ") + text(lo) + ", got " + s;
        if (!(v <= hi)) return "must be at most " + text(hi) + ", got " + s;
        return {};
      },
      "", "real_in");
}

int max_threads() { return 8 * int(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace snnc
