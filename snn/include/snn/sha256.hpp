// SHA-256 (FIPS 180-4), for content digests (checkpoints, job keys). Written here because the build
// depends on no crypto library; it is checked against the standard's test vectors (tests/core).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace snn {

class Sha256 {
 public:
  // use_hardware: the CPU's SHA instructions where it has them (the same digest; false tests the rest).
  explicit Sha256(bool use_hardware = true);
  static bool hardware_available();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest of everything updated so far, as 64 lowercase hex digits (the object is then spent).
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  void compress_blocks(const uint8_t* data, size_t blocks);
  bool use_hardware_;
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The SHA-256 of `text`, 64 lowercase hex digits.
std::string sha256_hex(std::string_view text);

}  // namespace snn
