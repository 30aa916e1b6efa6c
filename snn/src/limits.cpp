#include "snn/limits.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "snn/error.hpp"

namespace snn {

namespace {
std::string shortest(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
std::string shown(double v, const std::string& text) { return text.empty() ? shortest(v) : text; }
}  // namespace

int max_threads() { return 8 * int(std::max(1u, std::thread::hardware_concurrency())); }

WholeRange limits::threads() { return {0, max_threads()}; }

std::string range_problem(double v, const WholeRange& r, const std::string& text) {
  if (!std::isfinite(v) || v != std::floor(v)) return "must be a whole number, got '" + shown(v, text) + "'";
  if (v < double(r.lo)) return "must be at least " + std::to_string(r.lo) + ", got " + shown(v, text);
  if (v > double(r.hi)) return "must be at most " + std::to_string(r.hi) + ", got " + shown(v, text);
  return {};
}

std::string range_problem(double v, const RealRange& r, const std::string& text) {
  if (std::isnan(v)) return "must be a number, got '" + shown(v, text) + "'";
  if (r.open_lo ? !(v > r.lo) : !(v >= r.lo))
    return std::string("must be ") + (r.open_lo ? "greater than " : "at least ") + shortest(r.lo) + ", got " +
           shown(v, text);
  if (!(v <= r.hi)) return "must be at most " + shortest(r.hi) + ", got " + shown(v, text);
  return {};
}

void check_range(int64_t v, const WholeRange& r, const std::string& name) {
  // Compared as integers: a double cannot tell 2^53 + 1 from 2^53.
  if (v < r.lo) throw Error(name + " must be at least " + std::to_string(r.lo) + ", got " + std::to_string(v));
  if (v > r.hi) throw Error(name + " must be at most " + std::to_string(r.hi) + ", got " + std::to_string(v));
}

void check_range(double v, const RealRange& r, const std::string& name) {
  const std::string problem = range_problem(v, r);
  if (!problem.empty()) throw Error(name + " " + problem);
}

uint64_t parse_seed(const std::string& text, const std::string& name) {
  const std::string wanted = name + " must be a whole number in [0, 18446744073709551615], got '" + text + "'";
  // Digits only: strtoull would take "-1" as 2^64 - 1 and skip leading blanks; "1e23" or "0x10" is no seed.
  if (text.empty() || text.size() > 20 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw Error(wanted);
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) throw Error(wanted);
  return uint64_t(v);
}

}  // namespace snn
