// ModelProto and its parts from protobuf bytes (see onnx_model.hpp). Field numbers: onnx/onnx.proto.
#include "import/onnx/onnx_model.hpp"

#include "import/onnx/protobuf_wire.hpp"

namespace snn::conversion::onnx {

namespace {

using pb::Field;
using pb::Reader;

template <class T>
T& push_limited(const Reader& r, const Field& f, std::vector<T>& v, size_t limit, const char* what) {
  if (v.size() >= limit) r.fail(f, std::string("more than ") + std::to_string(limit) + " " + what);
  v.emplace_back();
  return v.back();
}

StringPair parse_pair(std::string_view bytes, const char* base) {
  StringPair p;
  Reader r(bytes, base, "StringStringEntryProto");
  for (Field f; r.next(f);) {
    if (f.number == 1) p.key = pb::as_string(r, f);
    if (f.number == 2) p.value = pb::as_string(r, f);
  }
  return p;
}

void parse_tensor_field(const Reader& r, const Field& f, Tensor& t, const char* base) {
  switch (f.number) {
    case 1: pb::append_int64s(r, f, t.dims, kMaxRank); break;
    case 2: t.data_type = int32_t(pb::as_int64(r, f)); break;
    case 3: t.has_segment = true; break;
    case 4: pb::append_floats(r, f, t.float_data, kMaxListElements); break;
    case 5: pb::append_int64s(r, f, t.int32_data, kMaxListElements); break;
    case 6: pb::as_bytes(r, f), ++t.string_count; break;
    case 7: pb::append_int64s(r, f, t.int64_data, kMaxListElements); break;
    case 8: t.name = pb::as_string(r, f); break;
    case 9: t.raw_data = pb::as_bytes(r, f), t.has_raw = true; break;
    case 10: pb::append_doubles(r, f, t.double_data, kMaxListElements); break;
    case 11: pb::append_uint64s(r, f, t.uint64_data, kMaxListElements); break;
    case 13: push_limited(r, f, t.external_data, 64, "external_data entries") = parse_pair(pb::as_bytes(r, f), base); break;
    case 14: t.data_location = int32_t(pb::as_int64(r, f)); break;
    default: break;
  }
}

Tensor parse_tensor(std::string_view bytes, const char* base) {
  Tensor t;
  Reader r(bytes, base, "TensorProto");
  for (Field f; r.next(f);) parse_tensor_field(r, f, t, base);
  return t;
}

void parse_shape(std::string_view bytes, const char* base, ValueInfo& v) {
  v.has_shape = true;
  Reader r(bytes, base, "TensorShapeProto");
  for (Field f; r.next(f);) {
    if (f.number != 1) continue;
    Dim& d = push_limited(r, f, v.dims, kMaxRank, "dimensions");
    Reader dr(pb::as_bytes(r, f), base, "TensorShapeProto.Dimension");
    for (Field g; dr.next(g);) {
      if (g.number == 1) d.value = pb::as_int64(dr, g);
      if (g.number == 2) d.param = pb::as_string(dr, g);
    }
    if (d.value < -1) d.value = -1;  // a negative dim_value is not a fixed size
  }
}

void parse_type(std::string_view bytes, const char* base, ValueInfo& v) {
  Reader r(bytes, base, "TypeProto");
  for (Field f; r.next(f);) {
    if (f.number != 1) continue;  // sequence, map, optional, sparse types: not tensors (no recursion)
    v.is_tensor = true;
    Reader tr(pb::as_bytes(r, f), base, "TypeProto.Tensor");
    for (Field g; tr.next(g);) {
      if (g.number == 1) v.elem_type = int32_t(pb::as_int64(tr, g));
      if (g.number == 2) parse_shape(pb::as_bytes(tr, g), base, v);
    }
  }
}

ValueInfo parse_value_info(std::string_view bytes, const char* base) {
  ValueInfo v;
  Reader r(bytes, base, "ValueInfoProto");
  for (Field f; r.next(f);) {
    if (f.number == 1) v.name = pb::as_string(r, f);
    if (f.number == 2) parse_type(pb::as_bytes(r, f), base, v);
  }
  return v;
}

void parse_attribute_field(const Reader& r, const Field& f, Attribute& a, const char* base) {
  switch (f.number) {
    case 1: a.name = pb::as_string(r, f); break;
    case 2: a.f = pb::as_float(r, f); break;
    case 3: a.i = pb::as_int64(r, f); break;
    case 4: a.s = pb::as_string(r, f); break;
    case 5: a.t = parse_tensor(pb::as_bytes(r, f), base); break;
    case 6: case 11: pb::as_bytes(r, f), ++a.graphs; break;
    case 7: pb::append_floats(r, f, a.floats, kMaxListElements); break;
    case 8: pb::append_int64s(r, f, a.ints, kMaxListElements); break;
    case 9: push_limited(r, f, a.strings, kMaxNodeIo, "strings") = pb::as_string(r, f); break;
    case 10: pb::as_bytes(r, f), ++a.tensors; break;
    case 20: a.type = int32_t(pb::as_int64(r, f)); break;
    case 21: a.ref_attr_name = pb::as_string(r, f); break;
    default: break;
  }
}

Attribute parse_attribute(std::string_view bytes, const char* base) {
  Attribute a;
  Reader r(bytes, base, "AttributeProto");
  for (Field f; r.next(f);) parse_attribute_field(r, f, a, base);
  return a;
}

Node parse_node(std::string_view bytes, const char* base) {
  Node n;
  Reader r(bytes, base, "NodeProto");
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1: push_limited(r, f, n.inputs, kMaxNodeIo, "inputs") = pb::as_string(r, f); break;
      case 2: push_limited(r, f, n.outputs, kMaxNodeIo, "outputs") = pb::as_string(r, f); break;
      case 3: n.name = pb::as_string(r, f); break;
      case 4: n.op_type = pb::as_string(r, f); break;
      case 5: push_limited(r, f, n.attributes, kMaxAttributes, "attributes") = parse_attribute(pb::as_bytes(r, f), base); break;
      case 7: n.domain = pb::as_string(r, f); break;
      case 9: push_limited(r, f, n.metadata, kMaxAttributes, "metadata entries") = parse_pair(pb::as_bytes(r, f), base); break;
      default: break;
    }
  }
  return n;
}

Graph parse_graph(std::string_view bytes, const char* base) {
  Graph g;
  Reader r(bytes, base, "GraphProto");
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1: push_limited(r, f, g.nodes, kMaxNodes, "nodes") = parse_node(pb::as_bytes(r, f), base); break;
      case 2: g.name = pb::as_string(r, f); break;
      case 5: push_limited(r, f, g.initializers, kMaxInitializers, "initializers") = parse_tensor(pb::as_bytes(r, f), base); break;
      case 11: push_limited(r, f, g.inputs, kMaxValueInfos, "inputs") = parse_value_info(pb::as_bytes(r, f), base); break;
      case 12: push_limited(r, f, g.outputs, kMaxValueInfos, "outputs") = parse_value_info(pb::as_bytes(r, f), base); break;
      case 13: push_limited(r, f, g.value_info, kMaxValueInfos, "value_info entries") = parse_value_info(pb::as_bytes(r, f), base); break;
      case 15: pb::as_bytes(r, f), ++g.sparse_initializers; break;
      default: break;
    }
  }
  return g;
}

OpsetId parse_opset(std::string_view bytes, const char* base) {
  OpsetId o;
  Reader r(bytes, base, "OperatorSetIdProto");
  for (Field f; r.next(f);) {
    if (f.number == 1) o.domain = pb::as_string(r, f);
    if (f.number == 2) o.version = pb::as_int64(r, f);
  }
  return o;
}

}  // namespace

std::string data_type_name(int32_t type) {
  static const char* names[] = {"UNDEFINED", "FLOAT",  "UINT8",  "INT8",   "UINT16",    "INT16",
                                "INT32",     "INT64",  "STRING", "BOOL",   "FLOAT16",   "DOUBLE",
                                "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
                                "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
                                "FLOAT8E8M0", "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2"};
  if (type >= 0 && size_t(type) < sizeof(names) / sizeof(names[0])) return names[type];
  return "data type " + std::to_string(type);
}

const Attribute* Node::find(const std::string& attr) const {
  for (const Attribute& a : attributes)
    if (a.name == attr) return &a;
  return nullptr;
}

const std::string* Node::meta(const std::string& key) const {
  for (const StringPair& p : metadata)
    if (p.key == key) return &p.value;
  return nullptr;
}

Model parse_model(std::string_view bytes) {
  Model m;
  const char* base = bytes.data();
  Reader r(bytes, base, "ModelProto");
  for (Field f; r.next(f);) {
    switch (f.number) {
      case 1: m.ir_version = pb::as_int64(r, f); break;
      case 2: m.producer_name = pb::as_string(r, f); break;
      case 3: m.producer_version = pb::as_string(r, f); break;
      case 7: m.graph = parse_graph(pb::as_bytes(r, f), base), m.has_graph = true; break;
      case 8: push_limited(r, f, m.opsets, 1024, "opset imports") = parse_opset(pb::as_bytes(r, f), base); break;
      case 25: pb::as_bytes(r, f), ++m.functions; break;
      default: break;
    }
  }
  return m;
}

bool looks_like_model(std::string_view prefix, uint64_t file_size) {
  // ModelProto's fields and their wire types (0 varint, 2 length-delimited); anything else: not ONNX.
  auto expected = [](uint32_t n) -> int {
    if (n == 1 || n == 5) return 0;
    if ((n >= 2 && n <= 4) || n == 6 || n == 7 || n == 8 || n == 14 || n == 20 || n == 25 || n == 26) return 2;
    return -1;
  };
  const char* p = prefix.data();
  const char* end = p + prefix.size();
  bool ir_version = false, body = false;
  uint64_t consumed = 0;
  while (p < end) {
    uint64_t key = 0;
    int shift = 0;
    for (;; shift += 7) {
      if (p == end || shift > 63) return ir_version && body;  // the prefix ends mid-key: judge what we saw
      const uint8_t b = uint8_t(*p++);
      key |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    const uint32_t number = uint32_t(key >> 3);
    if (expected(number) != int(key & 7)) return false;
    uint64_t v = 0;
    for (shift = 0;; shift += 7) {
      if (p == end || shift > 63) return ir_version && body;
      const uint8_t b = uint8_t(*p++);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (number == 1) ir_version = v >= 1 && v <= 100;
    if (number == 1 && !ir_version) return false;
    if ((key & 7) == 0) continue;
    consumed = uint64_t(p - prefix.data());
    if (v > file_size - consumed) return false;  // a length past the end of the file
    if (number == 7 || number == 8) body = true;
    if (v >= uint64_t(end - p)) break;            // the rest lies beyond the prefix
    p += v;
  }
  return ir_version && body;
}

}  // namespace snn::conversion::onnx
