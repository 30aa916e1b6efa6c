// TensorProto data -> OpConstant, including external data (see onnx_tensor.hpp).
#include "import/onnx/onnx_tensor.hpp"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "snn/error.hpp"

namespace snn::conversion::onnx {

namespace {

[[noreturn]] void fail(const TensorSource& src, const std::string& what, const std::string& msg) {
  throw snn::Error(src.model_path + ": " + what + ": " + msg);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);  // inf, nan
  else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0) bits = sign;
  else {  // subnormal: normalise
    int e = -1;
    uint32_t m = man;
    do { ++e, m <<= 1; } while (!(m & 0x400));
    bits = sign | uint32_t(112 - e) << 23 | ((m & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Bytes per element stored in raw_data, or 0 for a type the reader does not read.
size_t raw_width(int32_t type) {
  switch (type) {
    case kFloat: case kInt32: case kUint32: return 4;
    case kDouble: case kInt64: case kUint64: return 8;
    case kFloat16: case kBfloat16: case kInt16: case kUint16: return 2;
    case kInt8: case kUint8: case kBool: return 1;
    default: return 0;
  }
}

bool is_float_type(int32_t type) { return type == kFloat || type == kDouble || type == kFloat16 || type == kBfloat16; }

int64_t element_count(const Tensor& t, const TensorSource& src, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0) fail(src, what, "negative dimension " + std::to_string(d));
    if (d > kMaxTensorElements) fail(src, what, "dimension " + std::to_string(d) + " is beyond 2^40");
    if (d != 0 && n > kMaxTensorElements / d)
      fail(src, what, "declares more than 2^40 elements; snnc does not read tensors that large");
    n *= d;
  }
  return n;
}

// One element decoded from little-endian raw bytes.
void decode_raw(const char* p, int32_t type, double& f, int64_t& i) {
  uint64_t u = 0;
  std::memcpy(&u, p, raw_width(type));
  switch (type) {
    case kFloat: { float v; std::memcpy(&v, p, 4); f = v; return; }
    case kDouble: { double v; std::memcpy(&v, p, 8); f = v; return; }
    case kFloat16: f = half_to_float(uint16_t(u)); return;
    case kBfloat16: f = bf16_to_float(uint16_t(u)); return;
    case kInt8: i = int8_t(u); return;
    case kInt16: i = int16_t(u); return;
    case kInt32: i = int32_t(u); return;
    default: i = int64_t(u); return;  // uint8, uint16, uint32, bool, int64, uint64 (range checked by caller)
  }
}

OpConstant from_raw(std::string_view raw, const Tensor& t, int64_t n, const TensorSource& src, const std::string& what) {
  const size_t w = raw_width(t.data_type);
  if (uint64_t(raw.size()) != uint64_t(n) * w)
    fail(src, what, "holds " + std::to_string(raw.size()) + " bytes of data but its shape " + snn::to_string(t.dims) +
                        " needs " + std::to_string(uint64_t(n) * w) + "; the file is damaged");
  OpConstant c;
  c.shape = t.dims;
  c.is_int = !is_float_type(t.data_type);
  if (c.is_int) c.ints.resize(size_t(n));
  else c.values.resize(size_t(n));
  if (t.data_type == kFloat) {  // the common case: a straight copy (little-endian hosts)
    if (n) std::memcpy(c.values.data(), raw.data(), size_t(n) * 4);
    return c;
  }
  for (int64_t k = 0; k < n; ++k) {
    double f = 0;
    int64_t i = 0;
    decode_raw(raw.data() + size_t(k) * w, t.data_type, f, i);
    if (t.data_type == kUint64 && i < 0) fail(src, what, "holds a UINT64 value beyond the int64 range");
    if (c.is_int) c.ints[size_t(k)] = i;
    else c.values[size_t(k)] = float(f);
  }
  return c;
}

template <class V>
void check_count(const V& v, int64_t n, const Tensor& t, const TensorSource& src, const std::string& what) {
  if (int64_t(v.size()) != n)
    fail(src, what, "holds " + std::to_string(v.size()) + " values but its shape " + snn::to_string(t.dims) + " has " +
                        std::to_string(n) + " elements; the file is damaged");
}

OpConstant from_fields(const Tensor& t, int64_t n, const TensorSource& src, const std::string& what) {
  OpConstant c;
  c.shape = t.dims;
  c.is_int = !is_float_type(t.data_type);
  switch (t.data_type) {
    case kFloat: check_count(t.float_data, n, t, src, what); c.values = t.float_data; break;
    case kDouble:
      check_count(t.double_data, n, t, src, what);
      c.values.assign(t.double_data.begin(), t.double_data.end());
      break;
    case kFloat16: case kBfloat16:
      check_count(t.int32_data, n, t, src, what);
      for (int64_t b : t.int32_data)
        c.values.push_back(t.data_type == kFloat16 ? half_to_float(uint16_t(b)) : bf16_to_float(uint16_t(b)));
      break;
    case kInt64: check_count(t.int64_data, n, t, src, what); c.ints = t.int64_data; break;
    case kUint32: case kUint64:
      check_count(t.uint64_data, n, t, src, what);
      for (uint64_t u : t.uint64_data) {
        if (u > uint64_t(INT64_MAX)) fail(src, what, "holds a UINT64 value beyond the int64 range");
        c.ints.push_back(int64_t(u));
      }
      break;
    default: check_count(t.int32_data, n, t, src, what); c.ints = t.int32_data; break;
  }
  return c;
}

bool parse_decimal(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 19) return false;
  v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + uint64_t(ch - '0');
  }
  return true;
}

std::string read_external(const Tensor& t, const TensorSource& src, const std::string& what) {
  std::string location, offset_s = "0", length_s;
  for (const StringPair& p : t.external_data) {
    if (p.key == "location") location = p.value;
    if (p.key == "offset") offset_s = p.value;
    if (p.key == "length") length_s = p.value;
  }
  if (location.empty()) fail(src, what, "has external data without a location");
  const std::string file = resolve_external(src.model_dir, location, src.model_path + ": " + what);
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    fail(src, what, "its external data file '" + location + "' is missing or not a regular file");
  uint64_t offset = 0, length = 0;
  if (!parse_decimal(offset_s, offset)) fail(src, what, "has an external data offset '" + offset_s + "' that is not a number");
  if (length_s.empty()) length = offset <= uint64_t(st.st_size) ? uint64_t(st.st_size) - offset : 0;
  else if (!parse_decimal(length_s, length)) fail(src, what, "has an external data length '" + length_s + "' that is not a number");
  if (offset > uint64_t(st.st_size) || length > uint64_t(st.st_size) - offset)
    fail(src, what, "its external data (offset " + std::to_string(offset) + ", length " + std::to_string(length) +
                        ") runs past the end of '" + location + "' (" + std::to_string(st.st_size) +
                        " bytes); the weights file is truncated or belongs to another model");
  std::string bytes(size_t(length), '\0');
  std::ifstream in(file, std::ios::binary);
  in.seekg(std::streamoff(offset));
  in.read(bytes.data(), std::streamsize(length));
  if (!in) fail(src, what, "could not read its external data from '" + location + "'");
  return bytes;
}

}  // namespace

std::string resolve_external(const std::string& model_dir, const std::string& location, const std::string& context) {
  if (location.empty()) throw snn::Error(context + ": external data without a location");
  if (location.front() == '/' || location.find('\\') != std::string::npos)
    throw snn::Error(context + ": external data location '" + location +
                     "' is an absolute path; snnc reads external data only from files beside the model "
                     "(re-save it with a relative location)");
  for (size_t at = 0; at <= location.size();) {
    const size_t slash = std::min(location.find('/', at), location.size());
    if (location.compare(at, slash - at, "..") == 0 && slash - at == 2)
      throw snn::Error(context + ": external data location '" + location +
                       "' climbs outside the model's folder ('..'); move the data beside the model");
    at = slash + 1;
  }
  std::unique_ptr<char, decltype(&std::free)> dir(::realpath(model_dir.c_str(), nullptr), &std::free);
  std::unique_ptr<char, decltype(&std::free)> file(::realpath((model_dir + "/" + location).c_str(), nullptr), &std::free);
  if (!dir || !file)
    throw snn::Error(context + ": external data file '" + location + "' was not found beside the model");
  const std::string d(dir.get()), f(file.get());
  if (f.compare(0, d.size(), d) != 0 || f.size() <= d.size() || (f[d.size()] != '/' && d != "/"))
    throw snn::Error(context + ": external data location '" + location + "' resolves to '" + f +
                     "', outside the model's folder (a symbolic link?); copy the data beside the model");
  return f;
}

OpConstant to_constant(const Tensor& t, const TensorSource& src, const std::string& what) {
  if (raw_width(t.data_type) == 0)
    fail(src, what, "has data type " + data_type_name(t.data_type) +
                        ", which snnc does not read (float, float16, bfloat16, double and integer tensors only)");
  if (t.has_segment) fail(src, what, "is a segmented tensor, which snnc does not read");
  const int64_t n = element_count(t, src, what);
  OpConstant c;
  if (t.data_location == 1) c = from_raw(read_external(t, src, what), t, n, src, what);
  else if (t.has_raw) c = from_raw(t.raw_data, t, n, src, what);
  else c = from_fields(t, n, src, what);
  if (t.data_type == kDouble || t.data_type == kFloat16 || t.data_type == kBfloat16)
    src.notes->push_back(what + ": " + data_type_name(t.data_type) + " converted to float32");
  return c;
}

}  // namespace snn::conversion::onnx
