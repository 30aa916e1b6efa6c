#include "snn/nir_order.hpp"

#include <map>
#include <set>

#include "snn/error.hpp"

namespace snn {

namespace {

const std::set<std::string> kSupported = {"Input", "Output", "Conv2d", "Affine", "Linear", "IF", "LIF",
                                          "Scale", "AvgPool2d", "SumPool2d", "Flatten"};

// Why a known NIR node type has no snnc equivalent.
std::string unsupported_reason(const std::string& type) {
  static const std::map<std::string, std::string> why = {
      {"NIRGraph", "a nested graph (subgraph); snnc imports flat graphs only (flatten it before writing)"},
      {"CubaLIF", "a current-based LIF (a synaptic current state beside the membrane) has no snnc neuron"},
      {"CubaLI", "a current-based leaky integrator has no snnc layer"},
      {"LI", "a leaky integrator (a non-spiking, leaky readout) has no snnc layer"},
      {"I", "an integrator (a non-spiking readout) has no snnc layer"},
      {"Delay", "delays have no snnc layer"},
      {"Threshold", "a stateless threshold has no snnc layer"},
      {"Conv1d", "1-d convolution has no snnc layer (snnc runs C×H×W images)"}};
  const auto it = why.find(type);
  return it != why.end() ? it->second : "an unknown NIR node type";
}

}  // namespace

std::string nir_where(const std::string& path, const NirNodeData& node) {
  return path + ", node '" + node.name + "' (" + node.type + ")";
}

NirOrder nir_feed_forward_order(const NirGraphData& g, const std::string& path) {
  std::map<std::string, int> index;
  int input = -1, output = -1;
  for (int i = 0; i < int(g.nodes.size()); ++i) {
    const NirNodeData& n = g.nodes[size_t(i)];
    index[n.name] = i;
    require(kSupported.count(n.type), nir_where(path, n) + ": " + unsupported_reason(n.type) +
                                          ". snnc imports Input, Output, Conv2d, Affine, Linear, IF, LIF, Scale, "
                                          "AvgPool2d, SumPool2d and Flatten");
    int& slot = n.type == "Input" ? input : output;
    if (n.type != "Input" && n.type != "Output") continue;
    require(slot < 0, path + ": more than one " + n.type + " node ('" + g.nodes[size_t(std::max(slot, 0))].name +
                          "', '" + n.name + "'); snnc networks have one input and one readout");
    slot = i;
  }
  require(input >= 0 && output >= 0, path + ": the graph needs one Input and one Output node");
  NirOrder o;
  o.preds.resize(g.nodes.size());
  o.succs.resize(g.nodes.size());
  for (const auto& [a, b] : g.edges) {
    const auto ia = index.find(a), ib = index.find(b);
    require(ia != index.end() && ib != index.end(),
            path + ": edge '" + a + "' -> '" + b + "' names a node the graph does not have ('" +
                (ia == index.end() ? a : b) + "')");
    require(g.nodes[size_t(ib->second)].type != "Input", nir_where(path, g.nodes[size_t(ib->second)]) + ": has an incoming edge");
    require(g.nodes[size_t(ia->second)].type != "Output", nir_where(path, g.nodes[size_t(ia->second)]) + ": has an outgoing edge");
    o.preds[size_t(ib->second)].push_back(ia->second);
    o.succs[size_t(ia->second)].push_back(ib->second);
  }
  // Kahn's algorithm from the Input; a node left with unvisited inputs lies on a cycle or is unreachable.
  std::vector<size_t> missing(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) missing[i] = o.preds[i].size();
  std::vector<int> ready = {input};
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    o.nodes.push_back(i);
    for (int j : o.succs[size_t(i)])
      if (--missing[size_t(j)] == 0) ready.push_back(j);
  }
  std::set<int> seen(o.nodes.begin(), o.nodes.end());
  for (int i = 0; i < int(g.nodes.size()); ++i) {
    if (seen.count(i)) continue;
    const NirNodeData& n = g.nodes[size_t(i)];
    bool fed = false;  // some input already placed: the rest waits on a cycle
    for (int p : o.preds[size_t(i)]) fed = fed || seen.count(p);
    throw Error(nir_where(path, n) + (o.preds[size_t(i)].empty()
                                          ? ": is not reached from the input (no incoming edges)"
                                          : fed ? ": lies on a cycle (a recurrent edge); snnc imports feed-forward graphs only"
                                                : ": is not reached from the input, or lies on a cycle (a recurrent edge); "
                                                  "snnc imports feed-forward graphs only"));
  }
  for (int i : o.nodes)
    require(o.succs[size_t(i)].size() > 0 || i == output,
            nir_where(path, g.nodes[size_t(i)]) + ": its output reaches no node (it does not lead to the Output)");
  return o;
}

}  // namespace snn
