// Modules an exporter decomposed into ops that mean nothing one by one (lowering.hpp).
//
// torch.export decomposes adaptive average pooling whose windows do not tile the input (VGG's
// AdaptiveAvgPool2d(7) on a 2x2 map) into index arithmetic, gathers and sums; the ONNX exporter then
// writes those as Gather/Where/Add nodes. Their meaning is the module's: when a run of nodes all carry
// one module path of class AdaptiveAvgPool2d, read one activation and give one value of a declared
// [N, C, h, w] shape, the run is that module, and becomes one adaptive_avg_pool2d to (h, w).
#include <set>

#include "lowering.hpp"

namespace snn::conversion::detail {

namespace {

const std::set<std::string> kCanonical = {"adaptive_avg_pool2d", "avg_pool2d", "mean", "identity"};

}  // namespace

std::vector<OpNode> Lowering::collapse_modules() const {
  std::vector<OpNode> out;
  const std::vector<OpNode>& in = g_.nodes;
  for (size_t i = 0; i < in.size();) {
    size_t j = i;
    while (j < in.size() && !in[i].scope.empty() && in[j].scope == in[i].scope && in[j].scope_class == "AdaptiveAvgPool2d") ++j;
    bool decomposed = false;
    for (size_t k = i; k < j; ++k) decomposed |= !kCanonical.count(in[k].op);
    if (j == i || !decomposed) {
      out.push_back(in[i]);
      i = std::max(j, i + 1);
      continue;
    }
    // The run's activation inputs (values it reads that it does not make) and the values others read.
    std::set<int> made, read_in, used_after;
    for (size_t k = i; k < j; ++k) made.insert(in[k].outputs.begin(), in[k].outputs.end());
    for (size_t k = i; k < j; ++k)
      for (int v : in[k].inputs)
        if (v >= 0 && !made.count(v) && !g_.values[size_t(v)].is_constant) read_in.insert(v);
    for (size_t k = j; k < in.size(); ++k)
      for (int v : in[k].inputs)
        if (made.count(v)) used_after.insert(v);
    if (made.count(g_.output)) used_after.insert(g_.output);
    const snn::Shape shape = used_after.size() == 1 ? g_.values[size_t(*used_after.begin())].shape : snn::Shape{};
    if (read_in.size() != 1 || shape.size() != 4 || shape[2] <= 0 || shape[3] <= 0) {
      out.insert(out.end(), in.begin() + long(i), in.begin() + long(j));  // left as they are: refused op by op
      i = j;
      continue;
    }
    OpNode n = in[j - 1];
    n.op = "adaptive_avg_pool2d";
    n.source_op = "the ops of module '" + n.scope + "' (AdaptiveAvgPool2d)";
    n.inputs = {*read_in.begin()};
    n.outputs = {*used_after.begin()};
    n.attrs = {{"output_size", std::vector<int64_t>{shape[2], shape[3]}}};
    out.push_back(n);
    i = j;
  }
  return out;
}

}  // namespace snn::conversion::detail
