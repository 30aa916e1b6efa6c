#include "option_checks.hpp"

#include <cerrno>
#include <cstdlib>

namespace snnc {

namespace {

// Parses the whole string as a number; false when it is not one.
bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

}  // namespace

CLI::Validator whole_in(const snn::WholeRange& r) {
  return CLI::Validator(
      [r](std::string& s) -> std::string {
        double v = 0;
        if (!parse_number(s, &v)) return "must be a whole number, got '" + s + "'";
        return snn::range_problem(v, r, s);
      },
      "", "whole_in");
}

CLI::Validator whole_in(int64_t lo, int64_t hi) { return whole_in(snn::WholeRange{lo, hi}); }

CLI::Validator whole_at_least(int64_t lo) { return whole_in(lo, INT64_C(1) << 53); }

CLI::Validator real_in(const snn::RealRange& r) {
  return CLI::Validator(
      [r](std::string& s) -> std::string {
        double v = 0;
        if (!parse_number(s, &v)) return "must be a number, got '" + s + "'";
        return snn::range_problem(v, r, s);
      },
      "", "real_in");
}

CLI::Validator real_in(double lo, double hi, bool open_lo) { return real_in(snn::RealRange{lo, hi, open_lo}); }

}  // namespace snnc
