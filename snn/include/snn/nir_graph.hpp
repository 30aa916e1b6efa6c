// A NIR file as data: the HDF5 layout that NIR's nir.write (nir 1.0.x) and snnc's own export write —
// dataset /version, group /node of type "NIRGraph" with /node/nodes/<name> (a "type" string dataset and
// one dataset per parameter, scalars included; an optional "metadata" group) and /node/edges [E, 2]
// (source, target names; variable- or fixed-length strings). Reading checks the layout, types and
// sizes only; what the nodes mean is nir_import.cpp's business. Every error names the file and node.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "snn/tensor.hpp"

namespace snn {

// One dataset of a node: a string, integers (exact) or floating-point numbers (as float, snnc's precision).
struct NirValue {
  Shape shape;  // {} for a scalar
  bool is_string = false, is_integer = false;
  std::string text;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  int64_t size() const { return is_integer ? int64_t(ints.size()) : int64_t(floats.size()); }
};

struct NirNodeData {
  std::string name, type;
  std::map<std::string, NirValue> params;    // datasets beside "type" (groups other than metadata: by path a/b)
  std::map<std::string, NirValue> metadata;  // the node's metadata group
};

struct NirGraphData {
  std::string version;
  std::vector<NirNodeData> nodes;  // in the file's order
  std::vector<std::pair<std::string, std::string>> edges;
};

// Reads path; throws snn::Error naming the file (and node) when it is no NIR graph file.
NirGraphData read_nir_graph(const std::string& path);

}  // namespace snn
