// Module scopes of ONNX nodes: which PyTorch module a node came from. The dynamo exporter records the
// module stack in node metadata (pkg.torch.onnx.name_scopes, pkg.torch.onnx.class_hierarchy: Python
// list reprs); the TorchScript-based exporter only names nodes by scope ("/layer1/layer1.0/conv1/Conv"),
// without classes. The lowering finds QCFS modules by these.
#pragma once
#include <string>
#include <vector>

#include "import/onnx/onnx_model.hpp"

namespace snn::conversion::onnx {

struct Scope {
  std::string path;        // innermost module path ("layer1.0.conv1"), "" at the top level or unknown
  std::string class_name;  // its class, unqualified ("QCFS"), "" when not recorded
};

Scope node_scope(const Node& node);

// The strings of a Python list repr ("['', 'act', 'div']"); empty when it is not one.
std::vector<std::string> parse_python_list(const std::string& repr);

// Joins module names: relative ("layer1", "0"), qualified from the root (dynamo: "layer1", "layer1.0"), or
// qualified from the parent (TorchScript exporter: "layer2.0", "downsample", "downsample.0").
std::string join_scopes(const std::vector<std::string>& names);

}  // namespace snn::conversion::onnx
