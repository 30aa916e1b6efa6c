// lower_graph: runs an OpGraph's nodes in order and keeps what each value stands for (lowering.hpp).
#include "snn/conversion/import/lower_graph.hpp"

#include <algorithm>

#include "lowering.hpp"
#include "snn/error.hpp"
#include "snn/layers/all.hpp"

namespace snn::conversion {

snn::Network lower_graph(const OpGraph& graph, const std::string& file, const ImportOptions& options,
                         ImportReport* report) {
  ImportReport local;
  ImportReport* rep = report ? report : &local;
  *rep = ImportReport{};
  rep->format = graph.format;
  rep->producer = graph.producer;
  rep->notes = graph.notes;
  return detail::Lowering(graph, file, options, rep).run();
}

namespace detail {

namespace {

// Module classes whose path names the layer they become on its own (a leaf module).
bool leaf_class(const std::string& c) {
  static const std::set<std::string> leaves = {"Conv2d", "Linear", "ReLU", "ReLU6", "Hardtanh", "MaxPool2d",
                                               "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "Upsample",
                                               "UpsamplingNearest2d", "BatchNorm2d", "BatchNorm1d", "Dropout"};
  return leaves.count(c) || c.find("QCFS") != std::string::npos || c.find("ClipFloor") != std::string::npos;
}

}  // namespace

Lowering::Lowering(const OpGraph& graph, std::string file, const ImportOptions& options, ImportReport* report)
    : g_(graph), file_(std::move(file)), opts_(options), report_(report), net_(options.input_shape) {
  nodes_ = collapse_modules();
  vals_.resize(g_.values.size());
  readers_.assign(g_.values.size(), 0);
  for (const OpNode& n : nodes_)
    for (int v : n.inputs)
      if (v >= 0 && size_t(v) < readers_.size()) ++readers_[size_t(v)];
  if (g_.output >= 0 && size_t(g_.output) < readers_.size()) ++readers_[size_t(g_.output)];
  for (size_t i = 0; i < g_.values.size(); ++i)
    if (g_.values[i].is_constant) vals_[i].kind = Val::Kind::Const;
}

snn::Network Lowering::run() {
  const auto bad = [&](const std::string& m) { throw snn::Error(file_ + ": " + g_.format + ": " + m); };
  if (g_.input < 0 || size_t(g_.input) >= g_.values.size()) bad("the graph has no image input");
  if (g_.output < 0 || size_t(g_.output) >= g_.values.size()) bad("the graph has no output");
  const snn::Shape& declared = g_.values[size_t(g_.input)].shape;
  const bool fixed = declared.size() == 4 && std::all_of(declared.begin() + 1, declared.end(), [](int64_t d) { return d > 0; });
  if (fixed) {  // dynamic sizes (ONNX dim_params) are unknown here: any image size goes
    const snn::Shape per_image(declared.begin() + 1, declared.end());
    if (per_image != opts_.input_shape)
      bad("the model was exported for images " + snn::to_string(per_image) + ", not " +
          snn::to_string(opts_.input_shape) + " (the calibration data's or --input-shape)");
  }
  vals_[size_t(g_.input)] = node_val(snn::Network::kInput);
  for (const OpNode& n : nodes_) lower(n);
  OpNode out;
  out.name = g_.values[size_t(g_.output)].name;
  out.source_op = "output";
  out.inputs = {g_.output};
  const int last = node_of(out, 0, "the model's output");
  if (last != net_.output_node())
    bad("the output '" + out.name + "' is not the last layer computed; snnc reads out the last layer");
  if (net_.empty()) bad("the graph computes no layer");
  report_->reference_names = refs_;
  report_->reference_output_name = out.name;
  if (report_->relu_layers > 0)
    report_->notes.push_back(std::to_string(report_->relu_layers) +
                             " ReLU layer(s) have the provisional threshold 1: set thresholds from data");
  net_.metadata()["source_model"] = file_;
  return std::move(net_);
}

void Lowering::lower(const OpNode& n) {
  const std::string& k = n.op;
  if (elementwise(n)) return;
  if (k == "identity") return set(n, 0, in(n, 0));
  if (k == "conv2d") return conv2d(n);
  if (k == "batch_norm") return batch_norm(n);
  if (k == "linear") return linear(n);
  if (k == "matmul") return matmul(n);
  if (k == "avg_pool2d" || k == "max_pool2d") return pool(n, k == "max_pool2d");
  if (k == "adaptive_avg_pool2d") return adaptive_avg_pool(n);
  if (k == "mean") return mean(n);
  if (k == "upsample_nearest") return upsample(n);
  if (k == "flatten") return flatten(n);
  if (k == "reshape") return reshape(n);
  if (k == "squeeze" || k == "unsqueeze") return squeeze(n, k == "unsqueeze");
  if (k == "permute") return permute(n);
  if (k == "cat") return cat(n);
  if (k == "split") return split(n);
  if (k == "slice") return slice(n);
  // A reader that leaves an op unmapped says why in its name ("Resize(mode=linear)"): show that name.
  const std::string& op = n.op.rfind(n.source_op, 0) == 0 ? n.op : n.source_op;
  fail(n, "unsupported op '" + op + "'",
       "snnc converts conv, linear, batch norm, ReLU/clip/QCFS activations, pooling, flatten/reshape, residual "
       "adds, concatenation/split and nearest upsampling; an IF neuron's rate is a clipped ReLU, so other "
       "activations (sigmoid, GELU, SiLU...) have no spiking counterpart: replace them and retrain");
}

void Lowering::fail(const OpNode& n, const std::string& message, const std::string& hint) const {
  std::string m = file_ + ": " + g_.format + " " + g_.describe(n) + ": " + message;
  if (!hint.empty()) m += "; " + hint;
  throw snn::Error(m);
}

bool Lowering::has_input(const OpNode& n, size_t i) const { return i < n.inputs.size() && n.inputs[i] >= 0; }

const Lowering::Val& Lowering::in(const OpNode& n, size_t i) const {
  if (!has_input(n, i)) fail(n, "input " + std::to_string(i) + " is missing");
  const int v = n.inputs[i];
  if (size_t(v) >= vals_.size()) fail(n, "input " + std::to_string(i) + " refers to no value");
  if (vals_[size_t(v)].kind == Val::Kind::Unset)
    fail(n, "input '" + g_.values[size_t(v)].name + "' is used before it is computed (not a graph input or "
            "an output of an earlier node)");
  return vals_[size_t(v)];
}

bool Lowering::is_const(const OpNode& n, size_t i) const { return has_input(n, i) && in(n, i).kind == Val::Kind::Const; }

const OpConstant& Lowering::constant(const OpNode& n, size_t i, const char* what) const {
  if (!is_const(n, i)) fail(n, std::string(what) + " must be a constant (a weight), not computed from the input");
  return g_.values[size_t(n.inputs[i])].constant;
}

void Lowering::set(const OpNode& n, size_t out, Val v) {
  if (out >= n.outputs.size() || n.outputs[out] < 0 || size_t(n.outputs[out]) >= vals_.size())
    fail(n, "output " + std::to_string(out) + " is missing");
  vals_[size_t(n.outputs[out])] = std::move(v);
}

snn::Shape Lowering::shape(const Val& v) const {
  switch (v.kind) {
    case Val::Kind::Node:
    case Val::Kind::Pending: return net_.output_shape(v.node);
    case Val::Kind::Channels: {
      snn::Shape s(v.dims.begin(), v.dims.end());
      s.insert(s.end(), v.spatial.begin(), v.spatial.end());
      return s;
    }
    default: return {};
  }
}

int64_t Lowering::dim_arg(const OpNode& n, int64_t d, int rank) const {
  const int64_t r = d < 0 ? d + rank : d;
  if (r < 0 || r >= rank) fail(n, "dimension " + std::to_string(d) + " of a " + std::to_string(rank) + "-D tensor");
  return r;
}

Lowering::Val Lowering::node_val(int node) const {
  Val v;
  v.kind = Val::Kind::Node;
  v.node = node;
  return v;
}

int Lowering::node_of(const OpNode& n, size_t i, const char* what) {
  const Val& v = in(n, i);
  if (v.kind == Val::Kind::Const) fail(n, std::string(what) + " is a constant, not computed from the input");
  if (v.kind == Val::Kind::Node) return v.node;
  return materialise(n, n.inputs[i]);
}

int Lowering::add_layer(const OpNode& n, std::unique_ptr<snn::Layer> layer, const std::vector<int>& inputs,
                        int value) {
  int node = -1;
  try {
    node = net_.add(std::move(layer), inputs);
  } catch (const snn::Error& e) {
    fail(n, e.what(), "is the input shape " + snn::to_string(opts_.input_shape) + " the [C, H, W] the model was "
                      "exported for?");
  }
  refs_.resize(size_t(net_.size()));
  bind(node, value);
  return node;
}

void Lowering::bind(int node, int value) {
  if (node < 0) return;
  refs_.resize(size_t(net_.size()));
  refs_[size_t(node)] = value >= 0 && size_t(value) < g_.values.size() ? g_.values[size_t(value)].name : "";
}

std::string Lowering::layer_name(const OpNode& n, const std::string& kind) {
  std::string base = kind;
  if (!n.scope.empty()) base = leaf_class(n.scope_class) ? n.scope : n.scope + "." + kind;
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

snn::Layer* Lowering::foldable(const Val& v, int value) {
  if (v.kind != Val::Kind::Node || v.node < 0 || value < 0 || readers_[size_t(value)] != 1) return nullptr;
  // Made for this very value (not a node a fold already changed), and read by no layer yet.
  if (refs_[size_t(v.node)] != g_.values[size_t(value)].name) return nullptr;
  for (int i = v.node + 1; i < net_.size(); ++i)
    for (int j : net_.inputs(i))
      if (j == v.node) return nullptr;
  snn::Layer& l = net_.layer(v.node);
  return l.type() == "conv2d" || l.type() == "linear" ? &l : nullptr;
}

}  // namespace detail
}  // namespace snn::conversion
