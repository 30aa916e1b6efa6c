// Shared by the .pt2 reader's files: its internal error (a message without the file path, which
// read_exported_program prefixes) and its limits.
#pragma once
#include <cstdint>
#include <string>

#include "snn/error.hpp"

namespace snn::conversion::pt2 {

// Thrown inside the reader; read_exported_program rethrows it as snn::Error("PATH: " + what).
class Failure : public snn::Error {
 public:
  explicit Failure(const std::string& what) : snn::Error(what) {}
};
[[noreturn]] inline void fail(const std::string& what) { throw Failure(what); }

// Limits: generous for any CNN torchvision has, small enough that a hostile file cannot exhaust memory.
constexpr uint64_t kMaxJsonBytes = uint64_t(512) << 20;     // models/*.json, the payload configs
constexpr uint64_t kMaxWeightBytes = uint64_t(16) << 30;    // one weight file
constexpr int64_t kMaxElements = int64_t(1) << 40;          // elements of one declared tensor shape
constexpr size_t kMaxNodes = 200000;                        // graph nodes
constexpr size_t kMaxRank = 16;                             // dims of one tensor
constexpr int64_t kMaxFoldElements = int64_t(1) << 26;      // a constant folded from others (expand)

}  // namespace snn::conversion::pt2
