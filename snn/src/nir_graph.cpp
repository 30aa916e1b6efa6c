#include "snn/nir_graph.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <filesystem>

#include "snn/error.hpp"
#include "snn/hdf5_untrusted.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/isolated_codecs.hpp"
#include "snn/isolated_read.hpp"

namespace snn {

namespace {

constexpr int64_t kMaxElements = int64_t{1} << 28;  // per dataset: 1 GiB of floats
constexpr int64_t kMaxEdges = 1 << 20;
constexpr int kMaxDepth = 4;  // parameter groups within a node (Flatten's input_type, metadata)

Shape dataset_shape(const H5::DataSet& ds, const std::string& what) {
  H5::DataSpace space = ds.getSpace();
  const int rank = space.getSimpleExtentNdims();
  require(rank >= 0 && rank <= 8, what + ": rank " + std::to_string(rank) + " is not a NIR parameter");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank) space.getSimpleExtentDims(dims.data());
  Shape shape;
  int64_t n = 1;
  for (hsize_t d : dims) {
    require(d <= hsize_t(kMaxElements) && (n *= int64_t(d)) <= kMaxElements,
            what + ": more than 2^28 elements (" + std::to_string(rank) + "-d dataset)");
    shape.push_back(int64_t(d));
  }
  return shape;
}

// Strings of a dataset (fixed- or variable-length), in order.
std::vector<std::string> read_strings(const H5::DataSet& ds, int64_t n, const std::string& what) {
  std::vector<std::string> out;
  if (n == 0) return out;
  const H5::StrType file_type = ds.getStrType();
  if (file_type.isVariableStr()) {
    std::vector<char*> ptrs(size_t(n), nullptr);
    H5::StrType mem(H5::PredType::C_S1, H5T_VARIABLE);
    mem.setCset(file_type.getCset());  // h5py writes UTF-8; HDF5 converts no character sets
    ds.read(ptrs.data(), mem);
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5::DataSpace space = ds.getSpace();
    H5Dvlen_reclaim(mem.getId(), space.getId(), H5P_DEFAULT, ptrs.data());
    return out;
  }
  const size_t len = file_type.getSize();
  require(len > 0 && len <= 4096, what + ": strings of " + std::to_string(len) + " bytes");
  h5::require_own_storage(ds, n, what);
  std::vector<char> buf(size_t(n) * len);
  H5::StrType mem(H5::PredType::C_S1, len);
  mem.setCset(file_type.getCset());
  ds.read(buf.data(), mem);
  for (int64_t i = 0; i < n; ++i) {
    const char* s = buf.data() + size_t(i) * len;
    out.emplace_back(s, std::find(s, s + len, '\0'));
  }
  return out;
}

NirValue read_value(const H5::DataSet& ds, const std::string& what) {
  NirValue v;
  v.shape = dataset_shape(ds, what);
  const int64_t n = numel_of(v.shape);
  const H5T_class_t cls = ds.getTypeClass();
  if (cls == H5T_STRING) {
    require(n == 1, what + ": a string array where one string was expected");
    v.is_string = true;
    v.text = read_strings(ds, 1, what)[0];
  } else if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
    h5::require_own_storage(ds, n, what);
    v.is_integer = cls == H5T_INTEGER;
    if (v.is_integer) {
      v.ints.resize(size_t(n));
      if (n) ds.read(v.ints.data(), H5::PredType::NATIVE_INT64);
    } else {
      v.floats.resize(size_t(n));
      if (n) ds.read(v.floats.data(), H5::PredType::NATIVE_FLOAT);
    }
  } else {
    throw Error(what + ": neither numbers nor a string (HDF5 type class " + std::to_string(int(cls)) + ")");
  }
  return v;
}

// Datasets of g into `into`, subgroups by path ("input_type/input"); `metadata` groups go to meta.
void read_params(const H5::Group& g, const std::string& prefix, const std::string& what, int depth,
                 std::map<std::string, NirValue>& into, std::map<std::string, NirValue>* meta) {
  require(depth <= kMaxDepth, what + ": parameter groups nested too deep");
  for (const std::string& k : h5::child_names(g)) {
    const std::string key = prefix + k, where = what + ", '" + key + "'";
    const H5O_type_t type = g.childObjType(k);
    if (type == H5O_TYPE_DATASET) into[key] = read_value(g.openDataSet(k), where);
    else if (type == H5O_TYPE_GROUP && k == "metadata" && meta) read_params(g.openGroup(k), "", where, depth + 1, *meta, nullptr);
    else if (type == H5O_TYPE_GROUP) read_params(g.openGroup(k), key + "/", what, depth + 1, into, meta);
  }
}

std::vector<std::pair<std::string, std::string>> read_edges(const H5::Group& graph, const std::string& what) {
  std::vector<std::pair<std::string, std::string>> edges;
  require(graph.nameExists("edges") && graph.childObjType("edges") == H5O_TYPE_DATASET,
          what + ": no 'edges' dataset in /node");
  H5::DataSet ds = graph.openDataSet("edges");
  const Shape shape = dataset_shape(ds, what + ", edges");
  if (numel_of(shape) == 0) return edges;  // h5py writes an empty list as an empty float array
  require(ds.getTypeClass() == H5T_STRING && shape.size() == 2 && shape[1] == 2,
          what + ": 'edges' must be an [E, 2] array of node names, got " + to_string(shape));
  require(shape[0] <= kMaxEdges, what + ": more than 2^20 edges");
  const std::vector<std::string> names = read_strings(ds, 2 * shape[0], what + ", edges");
  for (int64_t e = 0; e < shape[0]; ++e) edges.emplace_back(names[size_t(2 * e)], names[size_t(2 * e + 1)]);
  return edges;
}

std::string read_type(const H5::Group& g, const std::string& what) {
  require(g.nameExists("type") && g.childObjType("type") == H5O_TYPE_DATASET, what + ": no 'type' dataset");
  const NirValue t = read_value(g.openDataSet("type"), what + ", 'type'");
  require(t.is_string, what + ": 'type' is not a string");
  return t.text;
}

NirGraphData read_graph(const H5::H5File& file, const std::string& path) {
  NirGraphData graph;
  if (file.nameExists("version") && file.childObjType("version") == H5O_TYPE_DATASET) {
    const NirValue v = read_value(file.openDataSet("version"), path + ", /version");
    graph.version = v.is_string ? v.text : "";
  }
  require(file.nameExists("node") && file.childObjType("node") == H5O_TYPE_GROUP,
          path + ": no /node group: not a NIR graph file (as nir.write writes)");
  H5::Group root = file.openGroup("node");
  const std::string type = read_type(root, path + ", /node");
  require(type == "NIRGraph", path + ": /node is a '" + type + "', not a NIRGraph");
  require(root.nameExists("nodes") && root.childObjType("nodes") == H5O_TYPE_GROUP, path + ": no /node/nodes group");
  H5::Group nodes = root.openGroup("nodes");
  for (const std::string& name : h5::child_names(nodes)) {
    const std::string what = path + ", node '" + name + "'";
    require(nodes.childObjType(name) == H5O_TYPE_GROUP, what + ": not a group");
    H5::Group g = nodes.openGroup(name);
    NirNodeData node;
    node.name = name;
    node.type = read_type(g, what);
    if (node.type != "NIRGraph") read_params(g, "", what, 0, node.params, &node.metadata);
    node.params.erase("type");
    graph.nodes.push_back(std::move(node));
  }
  graph.edges = read_edges(root, path);
  return graph;
}

NirGraphData read_nir_file(const std::string& path) {
  H5::Exception::dontPrint();
  try {
    require(H5::H5File::isHdf5(path), path + ": not an HDF5 file (a NIR graph as nir.write writes it?)");
    H5::H5File file = h5::open_untrusted(path);
    return read_graph(file, path);
  } catch (const H5::Exception& e) {
    const std::string stack = h5::error_stack_text();
    throw Error(path + ": cannot be read as a NIR graph (corrupted or truncated file?): " +
                (stack.empty() ? e.getFuncName() + ": " + e.getDetailMsg() : stack));
  }
}

}  // namespace

NirGraphData read_nir_graph(const std::string& path) {
  std::error_code ec;
  require(std::filesystem::exists(path, ec), "NIR file not found: " + path);
  require(!std::filesystem::is_directory(path, ec), path + ": is a directory, expected a NIR file");
  // Parsed in a child process: a crash inside libhdf5 cannot take snnc with it (isolated_read.hpp).
  return decode_nir_graph(read_isolated(path, [&] { return encode_nir_graph(read_nir_file(path)); }));
}

}  // namespace snn
