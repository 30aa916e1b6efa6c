// Overflow-checked size arithmetic. Shapes and counts come from files and options, so a product of
// them can wrap around int64 and turn into a small or negative size; these refuse instead.
#pragma once
#include <cstdint>
#include <string>

#include "snn/error.hpp"

namespace snn {

// No tensor may hold more elements than this (2^40, 4 TiB of float32): beyond it a shape is a damaged
// or hostile file, not a network.
constexpr int64_t kMaxElements = int64_t{1} << 40;

// a * b for non-negative a, b; throws naming `what` if the product overflows int64.
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) throw Error(what + ": size arithmetic overflows");
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw Error(what + ": size arithmetic overflows");
  return r;
}

}  // namespace snn
