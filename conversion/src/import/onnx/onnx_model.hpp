// The subset of onnx.proto (onnx 1.23) the reader needs, as plain structs: ModelProto, GraphProto,
// NodeProto, AttributeProto, TensorProto, ValueInfoProto. Field numbers are onnx.proto's; fields not
// listed here are skipped. Subgraphs (If/Loop/Scan bodies) are counted, not parsed: the reader refuses
// those ops, so nesting never goes deeper than model > graph > node > attribute > tensor.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace snn::conversion::onnx {

// TensorProto.DataType values used by the reader.
enum DataType : int32_t {
  kUndefined = 0, kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7,
  kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13, kComplex64 = 14,
  kComplex128 = 15, kBfloat16 = 16
};
std::string data_type_name(int32_t type);  // "FLOAT16", "COMPLEX64", "data type 99"

// Limits on what one file may declare (counts are checked as fields arrive).
constexpr size_t kMaxNodes = size_t(1) << 20;
constexpr size_t kMaxInitializers = size_t(1) << 20;
constexpr size_t kMaxValueInfos = size_t(1) << 21;
constexpr size_t kMaxNodeIo = size_t(1) << 16;      // inputs or outputs of one node
constexpr size_t kMaxAttributes = 4096;              // per node
constexpr size_t kMaxRank = 64;
constexpr size_t kMaxListElements = size_t(1) << 40; // repeated scalars (bounded by the bytes anyway)

struct StringPair {
  std::string key, value;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> dims;
  int32_t data_type = kUndefined;
  bool has_raw = false;
  std::string_view raw_data;          // points into the file's bytes
  std::vector<float> float_data;
  std::vector<int64_t> int32_data;    // int32 and narrower, bool, float16/bfloat16 bit patterns
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;  // uint32, uint64
  size_t string_count = 0;
  bool has_segment = false;
  int32_t data_location = 0;          // 1: EXTERNAL
  std::vector<StringPair> external_data;
};

struct Dim {
  int64_t value = -1;                 // -1: not a fixed value
  std::string param;                  // a symbolic dimension ("N", "batch_size")
};

struct ValueInfo {
  std::string name;
  int32_t elem_type = kUndefined;
  bool is_tensor = false;
  bool has_shape = false;
  std::vector<Dim> dims;
};

// AttributeProto.AttributeType values.
enum AttrType : int32_t {
  kAttrUndefined = 0, kAttrFloat = 1, kAttrInt = 2, kAttrString = 3, kAttrTensor = 4, kAttrGraph = 5,
  kAttrFloats = 6, kAttrInts = 7, kAttrStrings = 8, kAttrTensors = 9, kAttrGraphs = 10
};

struct Attribute {
  std::string name;
  int32_t type = kAttrUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::optional<Tensor> t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  size_t graphs = 0;                  // subgraphs (g, graphs): counted, not parsed
  size_t tensors = 0;                 // tensors (list): counted, not parsed
  std::string ref_attr_name;          // function attribute references: refused
};

struct Node {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;
  std::vector<Attribute> attributes;
  std::vector<StringPair> metadata;
  const Attribute* find(const std::string& attr) const;
  const std::string* meta(const std::string& key) const;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  size_t sparse_initializers = 0;
  std::vector<ValueInfo> inputs, outputs, value_info;
};

struct OpsetId {
  std::string domain;
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::vector<OpsetId> opsets;
  bool has_graph = false;
  Graph graph;
  size_t functions = 0;
};

// Parses a whole ModelProto. `bytes` must outlive the result (raw tensor data points into it). Throws
// pb::WireError (no file path in the message) on malformed bytes or exceeded limits.
Model parse_model(std::string_view bytes);

// True when `prefix` (the first bytes of a file of `file_size` bytes) parses as the start of a ModelProto:
// only ModelProto's fields with their wire types, an ir_version, and a graph or opset_import.
bool looks_like_model(std::string_view prefix, uint64_t file_size);

}  // namespace snn::conversion::onnx
