// A small bounded decoder of the protobuf wire format (varint, fixed32, fixed64, length-delimited), for
// the ONNX reader. Ours rather than libprotobuf: every length is checked against the bytes that remain
// before it is used, nothing is allocated from a count the file claims, and no generated code ties the
// reader to one onnx.proto version. Errors are WireError: a message without the file path (the caller
// adds it), naming the message type and the byte offset.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "snn/error.hpp"

namespace snn::conversion::pb {

struct WireError : snn::Error {
  using snn::Error::Error;
};

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t varint = 0;       // kVarint; the raw bits of kFixed32/kFixed64
  std::string_view bytes;    // kLen
  size_t offset = 0;         // where the field's key starts, from the start of the file
};

// Reads the fields of one message. `base` is the start of the whole file (for offsets in messages);
// `what` names the message type ("NodeProto").
class Reader {
 public:
  Reader(std::string_view message, const char* base, const char* what)
      : p_(message.data()), end_(message.data() + message.size()), base_(base), what_(what) {}
  // The next field, or false at the end of the message. Throws WireError on malformed bytes.
  bool next(Field& f);
  const char* what() const { return what_; }
  [[noreturn]] void fail(const Field& f, const std::string& message) const;

 private:
  uint64_t varint();
  size_t offset() const { return size_t(p_ - base_); }
  const char* p_;
  const char* end_;
  const char* base_;
  const char* what_;
};

// Typed views of a field; each checks the wire type (a mismatch is a WireError naming the field).
int64_t as_int64(const Reader& r, const Field& f);
float as_float(const Reader& r, const Field& f);
std::string_view as_bytes(const Reader& r, const Field& f);
inline std::string as_string(const Reader& r, const Field& f) { return std::string(as_bytes(r, f)); }

// Repeated scalar fields, packed (one length-delimited field) or not (one field per element). `limit`
// caps the total elements in `out`.
void append_int64s(const Reader& r, const Field& f, std::vector<int64_t>& out, size_t limit);
void append_floats(const Reader& r, const Field& f, std::vector<float>& out, size_t limit);
void append_doubles(const Reader& r, const Field& f, std::vector<double>& out, size_t limit);
void append_uint64s(const Reader& r, const Field& f, std::vector<uint64_t>& out, size_t limit);

}  // namespace snn::conversion::pb
