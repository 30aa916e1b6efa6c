#include "snn/isolated_codecs.hpp"

#include "snn/byte_codec.hpp"
#include "snn/error.hpp"

namespace snn {
namespace {

void require_done(const ByteReader& in, const char* what) {
  if (!in.done()) throw Error(std::string("a child reader's ") + what + " has trailing bytes");
}

void put_value(ByteWriter& out, const NirValue& v) {
  out.ints(v.shape);
  out.u64((v.is_string ? 1u : 0u) | (v.is_integer ? 2u : 0u));
  out.str(v.text);
  out.ints(v.ints);
  out.floats(v.floats);
}

NirValue get_value(ByteReader& in) {
  NirValue v;
  v.shape = in.ints();
  const uint64_t flags = in.u64();
  v.is_string = flags & 1u;
  v.is_integer = flags & 2u;
  v.text = in.str();
  v.ints = in.ints();
  v.floats = in.floats();
  return v;
}

void put_values(ByteWriter& out, const std::map<std::string, NirValue>& values) {
  out.u64(values.size());
  for (const auto& [k, v] : values) {
    out.str(k);
    put_value(out, v);
  }
}

std::map<std::string, NirValue> get_values(ByteReader& in) {
  std::map<std::string, NirValue> values;
  for (size_t n = in.count(1); n > 0; --n) {
    std::string k = in.str();
    values[k] = get_value(in);
  }
  return values;
}

}  // namespace

std::string encode_dataset(const Dataset& d) {
  ByteWriter out;
  out.tensor(d.images);
  out.ints(std::vector<int64_t>(d.labels.begin(), d.labels.end()));
  out.i64(d.num_classes);
  out.str(d.source);
  return out.take();
}

Dataset decode_dataset(const std::string& bytes) {
  ByteReader in(bytes);
  Dataset d;
  d.images = in.tensor();
  const std::vector<int64_t> labels = in.ints();
  d.labels.assign(labels.begin(), labels.end());  // validated by the child (kMaxClasses)
  d.num_classes = int32_t(in.i64());
  d.source = in.str();
  require_done(in, "dataset");
  return d;
}

std::string encode_nir_graph(const NirGraphData& g) {
  ByteWriter out;
  out.str(g.version);
  out.u64(g.nodes.size());
  for (const auto& node : g.nodes) {
    out.str(node.name);
    out.str(node.type);
    put_values(out, node.params);
    put_values(out, node.metadata);
  }
  out.u64(g.edges.size());
  for (const auto& [from, to] : g.edges) {
    out.str(from);
    out.str(to);
  }
  return out.take();
}

NirGraphData decode_nir_graph(const std::string& bytes) {
  ByteReader in(bytes);
  NirGraphData g;
  g.version = in.str();
  for (size_t n = in.count(1); n > 0; --n) {
    NirNodeData node;
    node.name = in.str();
    node.type = in.str();
    node.params = get_values(in);
    node.metadata = get_values(in);
    g.nodes.push_back(std::move(node));
  }
  for (size_t n = in.count(1); n > 0; --n) {
    std::string from = in.str();
    g.edges.emplace_back(std::move(from), in.str());
  }
  require_done(in, "NIR graph");
  return g;
}

}  // namespace snn
