// Weights (see weights.hpp): payload configs, storage files, strided views, dtype conversion.
#include "import/pt2/weights.hpp"

#include <cmath>
#include <cstring>

#include "import/pt2/common.hpp"
#include "import/pt2/json_view.hpp"

namespace snn::conversion::pt2 {

namespace {

struct DType {
  const char* name;
  size_t size;
  bool is_float;
};

// torch/_export/serde/schema.py ScalarType -> what snnc reads; nullptr for the rest.
const DType* dtype_of(int64_t code) {
  static const DType u8{"uint8", 1, false}, i8{"int8", 1, false}, i16{"int16", 2, false}, i32{"int32", 4, false},
      i64{"int64", 8, false}, f16{"float16", 2, true}, f32{"float32", 4, true}, f64{"float64", 8, true},
      b{"bool", 1, false}, bf16{"bfloat16", 2, true};
  switch (code) {
    case 1: return &u8;
    case 2: return &i8;
    case 3: return &i16;
    case 4: return &i32;
    case 5: return &i64;
    case 6: return &f16;
    case 7: return &f32;
    case 8: return &f64;
    case 12: return &b;
    case 13: return &bf16;
    default: return nullptr;
  }
}

float half_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.f : 1.f;
  if (exp == 0) return sign * std::ldexp(float(mant), -24);
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(float(mant | 0x400), exp - 25);
}

// One element at byte position p, little-endian.
double float_at(const uint8_t* p, const DType& t) {
  if (t.size == 4) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (t.size == 8) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  const uint16_t h = uint16_t(p[0] | p[1] << 8);
  if (std::strcmp(t.name, "bfloat16") == 0) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  return half_to_float(h);
}

int64_t int_at(const uint8_t* p, const DType& t) {
  switch (t.size) {
    case 1: return std::strcmp(t.name, "int8") == 0 ? int64_t(int8_t(p[0])) : int64_t(p[0]);
    case 2: return int16_t(uint16_t(p[0] | p[1] << 8));
    case 4: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

// The view must lie inside the storage; returns the element count. Overflow-free: every term is
// checked against the storage size before it is added.
int64_t check_view(const TensorMeta& m, int64_t storage_numel, const std::string& what) {
  if (!m.known) fail(what + " has symbolic sizes");
  if (m.strides.size() != m.sizes.size()) fail(what + " has " + std::to_string(m.strides.size()) + " strides for " + std::to_string(m.sizes.size()) + " dims");
  const int64_t numel = checked_numel(m.sizes, what);
  if (numel == 0) return 0;
  if (m.storage_offset < 0 || m.storage_offset >= storage_numel)
    fail(what + "'s storage offset " + std::to_string(m.storage_offset) + " lies outside its storage of " + std::to_string(storage_numel) + " elements");
  int64_t last = m.storage_offset;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    const int64_t s = m.strides[d], n = m.sizes[d] - 1;
    if (s < 0) fail(what + " has a negative stride");
    if (n > 0 && s > 0 && (s > storage_numel || n > (storage_numel - last) / s))
      fail(what + "'s view (sizes, strides, offset) reaches past its storage of " + std::to_string(storage_numel) + " elements");
    last += n * s;
  }
  if (last >= storage_numel) fail(what + "'s view reaches past its storage of " + std::to_string(storage_numel) + " elements");
  if (numel > storage_numel) fail(what + " has more elements than its storage (a broadcast view), which snnc does not read");
  return numel;
}

// Gathers the strided view into a contiguous constant.
OpConstant gather(const std::string& bytes, const TensorMeta& m, const DType& t, int64_t numel) {
  OpConstant c;
  c.shape = m.sizes;
  c.is_int = !t.is_float;
  if (t.is_float) c.values.resize(size_t(numel));
  else c.ints.resize(size_t(numel));
  const auto* base = reinterpret_cast<const uint8_t*>(bytes.data());
  std::vector<int64_t> index(m.sizes.size(), 0);
  int64_t offset = m.storage_offset;
  for (int64_t i = 0; i < numel; ++i) {
    const uint8_t* p = base + size_t(offset) * t.size;
    if (t.is_float) c.values[size_t(i)] = float(float_at(p, t));
    else c.ints[size_t(i)] = int_at(p, t);
    for (size_t d = m.sizes.size(); d-- > 0;) {  // odometer over the dims, last fastest
      offset += m.strides[d];
      if (++index[d] < m.sizes[d]) break;
      offset -= m.strides[d] * m.sizes[d];
      index[d] = 0;
    }
  }
  return c;
}

}  // namespace

Weights::Weights(Pt2Archive& archive) : archive_(archive) {
  const std::string& model = archive.model();
  if (archive.find("data/weights/" + model + ".pt"))
    fail("the weights are stored as a pickle (data/weights/" + model + ".pt, an older torch.export format), which snnc does not "
         "read; save the program again with torch.export.save from torch 2.6 or later");
  read_config("data/weights/" + model + "_weights_config.json", false);
  if (archive.find("data/constants/" + model + "_constants_config.json"))
    read_config("data/constants/" + model + "_constants_config.json", true);
}

void Weights::read_config(const std::string& relative, bool constants) {
  const nlohmann::json json = archive_.read_json(relative);
  const JsonView doc(json, archive_.root() + relative);
  auto& table = constants ? constants_ : weights_;
  for (const auto& [key, v] : doc.at("config").members()) {
    Payload p;
    p.path_name = v.at("path_name").str();
    if (const auto pickle = v.find("use_pickle")) p.use_pickle = pickle->boolean();
    if (!p.use_pickle) {
      p.meta = parse_tensor_meta(v.at("tensor_meta"));
      ++uses_left_[(constants ? "c/" : "w/") + p.path_name];
    }
    table[key] = std::move(p);
  }
}

bool Weights::has(const std::string& key, bool from_constants) const {
  return (from_constants ? constants_ : weights_).count(key) > 0;
}

// The storage file's bytes; kept only while other keys still need them.
const std::string& Weights::storage(const Payload& p, bool constants, const std::string& what) {
  const std::string id = (constants ? "c/" : "w/") + p.path_name;
  auto it = storages_.find(id);
  if (it == storages_.end()) {
    const std::string relative = (constants ? "data/constants/" : "data/weights/") + p.path_name;
    it = storages_.emplace(id, archive_.read(relative, kMaxWeightBytes, "the storage of " + what)).first;
  }
  return it->second;
}

OpConstant Weights::load(const std::string& key, bool from_constants, const std::string& what) {
  const auto& table = from_constants ? constants_ : weights_;
  auto it = table.find(key);
  if (it == table.end()) fail(what + " is not in the archive's " + (from_constants ? "constants" : "weights") + " config");
  const Payload& p = it->second;
  if (p.use_pickle) fail(what + " is stored as a pickle (a tensor subclass), which snnc does not read");
  const DType* t = dtype_of(p.meta.dtype);
  if (!t) fail(what + " has dtype " + std::to_string(p.meta.dtype) + " (torch.export ScalarType), which snnc does not read");
  if (p.meta.layout != 7) fail(what + " has layout " + std::to_string(p.meta.layout) + ", not strided");
  const std::string& bytes = storage(p, from_constants, what);
  if (bytes.size() % t->size != 0)
    fail(what + "'s storage is " + std::to_string(bytes.size()) + " bytes, not a whole number of " + t->name + " elements");
  const int64_t storage_numel = int64_t(bytes.size() / t->size);
  if (storage_numel == 0 && checked_numel(p.meta.sizes, what) > 0)
    fail(what + " has no data in the archive (saved from a fake tensor?)");
  const int64_t numel = check_view(p.meta, storage_numel, what);
  OpConstant c = gather(bytes, p.meta, *t, numel);
  if (t->is_float && t->size != 4) ++converted_[t->name];
  const std::string id = (from_constants ? "c/" : "w/") + p.path_name;
  if (--uses_left_[id] <= 0) storages_.erase(id);
  return c;
}

std::vector<std::string> Weights::notes() const {
  std::vector<std::string> out;
  for (const auto& [name, n] : converted_)
    out.push_back(std::to_string(n) + " tensor" + (n == 1 ? "" : "s") + " stored as " + name + " converted to float32");
  return out;
}

}  // namespace snn::conversion::pt2
