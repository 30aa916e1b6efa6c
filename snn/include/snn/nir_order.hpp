// The order snnc builds a NIR graph in: its nodes topologically sorted from its one Input, with each
// node's incoming and outgoing edges. Refuses, naming the node, what is no feed-forward graph of the
// node types snnc runs: other types (CubaLIF, LI, I, Delay, Threshold, Conv1d, ...), nested NIRGraph
// nodes, edges naming unknown nodes, cycles (recurrent edges), nodes the Input does not reach or that
// lead nowhere, and graphs without exactly one Input and one Output. Internal to the core.
#pragma once
#include <string>
#include <vector>

#include "snn/nir_graph.hpp"

namespace snn {

struct NirOrder {
  std::vector<int> nodes;                     // indices into NirGraphData::nodes, inputs before readers
  std::vector<std::vector<int>> preds, succs;  // per node, in edge order
};

NirOrder nir_feed_forward_order(const NirGraphData& g, const std::string& path);

// "PATH, node 'NAME' (TYPE)": how errors name a node.
std::string nir_where(const std::string& path, const NirNodeData& node);

}  // namespace snn
