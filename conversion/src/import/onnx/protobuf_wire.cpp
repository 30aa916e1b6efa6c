// The protobuf wire-format decoder (see protobuf_wire.hpp).
#include "import/onnx/protobuf_wire.hpp"

#include <algorithm>
#include <cstring>

namespace snn::conversion::pb {

namespace {

const char* type_name(WireType t) {
  switch (t) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLen: return "length-delimited";
    case WireType::kFixed32: return "fixed32";
  }
  return "?";
}

void expect(const Reader& r, const Field& f, WireType t) {
  if (f.type != t)
    r.fail(f, "field " + std::to_string(f.number) + " has wire type " + type_name(f.type) + ", expected " +
                  type_name(t));
}

void check_room(const Reader& r, const Field& f, size_t have, size_t more, size_t limit) {
  if (more > limit || have > limit - more)
    r.fail(f, "field " + std::to_string(f.number) + " holds more than " + std::to_string(limit) + " elements");
}

// Decodes a varint from [p, end); false when truncated or longer than 10 bytes.
bool read_varint(const char*& p, const char* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const uint8_t b = uint8_t(*p++);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

template <class T, size_t N>
void append_fixed(const Reader& r, const Field& f, WireType single, std::vector<T>& out, size_t limit) {
  static_assert(sizeof(T) == N, "fixed-width element");
  if (f.type == single) {
    check_room(r, f, out.size(), 1, limit);
    T v;
    std::memcpy(&v, &f.varint, N);  // little-endian hosts only (x86-64, aarch64)
    out.push_back(v);
    return;
  }
  expect(r, f, WireType::kLen);
  if (f.bytes.size() % N != 0)
    r.fail(f, "packed field " + std::to_string(f.number) + " is " + std::to_string(f.bytes.size()) +
                  " bytes, not a multiple of " + std::to_string(N));
  const size_t n = f.bytes.size() / N;
  check_room(r, f, out.size(), n, limit);
  const size_t at = out.size();
  out.resize(at + n);
  if (n) std::memcpy(out.data() + at, f.bytes.data(), n * N);
}

}  // namespace

void Reader::fail(const Field& f, const std::string& message) const {
  throw WireError(std::string(what_) + " at byte " + std::to_string(f.offset) + ": " + message);
}

uint64_t Reader::varint() {
  uint64_t v = 0;
  const size_t at = offset();
  if (!read_varint(p_, end_, v))
    throw WireError(std::string(what_) + " at byte " + std::to_string(at) + ": truncated or overlong varint");
  return v;
}

bool Reader::next(Field& f) {
  if (p_ == end_) return false;
  f = Field{};
  f.offset = offset();
  const uint64_t key = varint();
  f.number = uint32_t(key >> 3);
  if ((key >> 3) == 0 || (key >> 3) > 536870911u) fail(f, "invalid field number " + std::to_string(key >> 3));
  switch (key & 7) {
    case 0: f.type = WireType::kVarint; f.varint = varint(); return true;
    case 1: f.type = WireType::kFixed64; break;
    case 5: f.type = WireType::kFixed32; break;
    case 2: {
      f.type = WireType::kLen;
      const uint64_t n = varint();
      if (n > uint64_t(end_ - p_))
        fail(f, "field " + std::to_string(f.number) + " claims " + std::to_string(n) + " bytes but only " +
                    std::to_string(end_ - p_) + " remain in its message");
      f.bytes = std::string_view(p_, size_t(n));
      p_ += n;
      return true;
    }
    default: fail(f, "field " + std::to_string(f.number) + " has unsupported wire type " + std::to_string(key & 7));
  }
  const size_t width = f.type == WireType::kFixed64 ? 8 : 4;
  if (size_t(end_ - p_) < width) fail(f, "truncated fixed-width field " + std::to_string(f.number));
  std::memcpy(&f.varint, p_, width);  // little-endian hosts only
  p_ += width;
  return true;
}

int64_t as_int64(const Reader& r, const Field& f) {
  expect(r, f, WireType::kVarint);
  return int64_t(f.varint);
}

float as_float(const Reader& r, const Field& f) {
  expect(r, f, WireType::kFixed32);
  float v;
  const uint32_t bits = uint32_t(f.varint);
  std::memcpy(&v, &bits, 4);
  return v;
}

std::string_view as_bytes(const Reader& r, const Field& f) {
  expect(r, f, WireType::kLen);
  return f.bytes;
}

void append_int64s(const Reader& r, const Field& f, std::vector<int64_t>& out, size_t limit) {
  if (f.type == WireType::kVarint) {
    check_room(r, f, out.size(), 1, limit);
    out.push_back(int64_t(f.varint));
    return;
  }
  expect(r, f, WireType::kLen);
  // Count first (each varint ends in a byte below 0x80), so the reservation is what the bytes hold.
  size_t n = 0;
  for (char c : f.bytes) n += (uint8_t(c) & 0x80) == 0;
  check_room(r, f, out.size(), n, limit);
  out.reserve(out.size() + n);
  const char* p = f.bytes.data();
  const char* end = p + f.bytes.size();
  while (p != end) {
    uint64_t v;
    if (!read_varint(p, end, v)) r.fail(f, "truncated varint in packed field " + std::to_string(f.number));
    out.push_back(int64_t(v));
  }
}

void append_floats(const Reader& r, const Field& f, std::vector<float>& out, size_t limit) {
  append_fixed<float, 4>(r, f, WireType::kFixed32, out, limit);
}

void append_doubles(const Reader& r, const Field& f, std::vector<double>& out, size_t limit) {
  append_fixed<double, 8>(r, f, WireType::kFixed64, out, limit);
}

void append_uint64s(const Reader& r, const Field& f, std::vector<uint64_t>& out, size_t limit) {
  std::vector<int64_t> tmp;
  append_int64s(r, f, tmp, limit - std::min(limit, out.size()));
  out.insert(out.end(), tmp.begin(), tmp.end());
}

}  // namespace snn::conversion::pb
