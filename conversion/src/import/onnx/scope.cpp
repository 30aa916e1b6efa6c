// Module scopes from exporter metadata or node names (see scope.hpp).
#include "import/onnx/scope.hpp"

namespace snn::conversion::onnx {

std::vector<std::string> parse_python_list(const std::string& repr) {
  std::vector<std::string> out;
  size_t i = 0;
  auto skip_space = [&] { while (i < repr.size() && repr[i] == ' ') ++i; };
  skip_space();
  if (i >= repr.size() || repr[i++] != '[') return {};
  for (;;) {
    skip_space();
    if (i >= repr.size()) return {};
    if (repr[i] == ']') return out;
    const char quote = repr[i++];
    if (quote != '\'' && quote != '"') return {};
    std::string s;
    while (i < repr.size() && repr[i] != quote) {
      if (repr[i] == '\\' && i + 1 < repr.size()) ++i;  // an escaped character, kept literally
      s += repr[i++];
    }
    if (i >= repr.size()) return {};
    ++i;
    out.push_back(s);
    skip_space();
    if (i < repr.size() && repr[i] == ',') ++i;
  }
}

std::string join_scopes(const std::vector<std::string>& names) {
  std::string path;
  for (const std::string& n : names) {
    if (n.empty()) continue;
    const std::string last = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    if (!path.empty() && n.compare(0, path.size() + 1, path + ".") == 0) path = n;  // qualified from the root
    else if (!last.empty() && n.compare(0, last.size() + 1, last + ".") == 0) path += n.substr(last.size());  // "downsample.0"
    else path = path.empty() ? n : path + "." + n;
  }
  return path;
}

Scope node_scope(const Node& node) {
  Scope s;
  const std::string* names = node.meta("pkg.torch.onnx.name_scopes");
  if (names) {
    std::vector<std::string> list = parse_python_list(*names);
    if (list.size() >= 2) {
      list.pop_back();  // the FX node's own name
      s.path = join_scopes(list);
      const std::string* classes = node.meta("pkg.torch.onnx.class_hierarchy");
      const std::vector<std::string> cls = classes ? parse_python_list(*classes) : std::vector<std::string>{};
      if (!s.path.empty() && cls.size() == list.size() + 1) {
        const std::string& c = cls[cls.size() - 2];
        s.class_name = c.substr(c.rfind('.') == std::string::npos ? 0 : c.rfind('.') + 1);
      }
    }
    // onnxscript's optimizer fuses a BatchNorm into the Conv before it and keeps the BatchNorm's scope:
    // the conv's own module is its weight's ("layer1.0.conv1.weight").
    const std::string* rule = node.meta("pkg.onnxscript.rewriter.rule_name");
    const std::string suffix = ".weight";
    if (rule && rule->find("FuseBatchNorm") != std::string::npos && node.op_type == "Conv" && node.inputs.size() > 1 &&
        node.inputs[1].size() > suffix.size() && node.inputs[1].compare(node.inputs[1].size() - suffix.size(), suffix.size(), suffix) == 0) {
      s.path = node.inputs[1].substr(0, node.inputs[1].size() - suffix.size());
      s.class_name.clear();  // not recorded
    }
    return s;
  }
  // "/layer1/layer1.0/conv1/Conv": the segments before the op's own are module names.
  if (node.name.size() > 1 && node.name[0] == '/') {
    std::vector<std::string> parts;
    size_t at = 1;
    for (size_t slash; (slash = node.name.find('/', at)) != std::string::npos; at = slash + 1)
      parts.push_back(node.name.substr(at, slash - at));
    s.path = join_scopes(parts);
  }
  return s;
}

}  // namespace snn::conversion::onnx
