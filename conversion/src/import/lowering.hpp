// Private to snn_conversion: the Lowering behind lower_graph (lower_graph.hpp). lower_graph.cpp runs
// the graph and keeps the values; lower_layers.cpp maps weight, pooling and shape ops to layers;
// lower_channels.cpp the ops that only move channels; lower_elementwise.cpp the runs of elementwise ops
// that become neurons, affine folds or residual sums.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "elementwise.hpp"
#include "snn/conversion/import/lower_graph.hpp"
#include "snn/layer.hpp"

namespace snn::conversion::detail {

class Lowering {
 public:
  Lowering(const OpGraph& graph, std::string file, const ImportOptions& options, ImportReport* report);
  snn::Network run();

 private:
  // What a graph value stands for while lowering.
  struct Val {
    enum class Kind { Unset, Const, Node, Channels, Pending };
    Kind kind = Kind::Unset;
    int node = snn::Network::kInput;  // Node; Pending: the root node the function reads
    // Channels: channel c is channel channels[c].second of node channels[c].first; the per-image shape
    // is dims ++ spatial (several dims while a channel shuffle views [g, C/g]).
    std::vector<std::pair<int, int64_t>> channels;
    std::vector<int64_t> dims;
    snn::Shape spatial;
    // Pending: an elementwise function of the root node, not yet a layer; root_value is the graph value
    // the root stands for (its readers decide whether an affine map may fold into it).
    std::shared_ptr<ElementwiseFunction> fn;
    int term = 0;
    int root_value = -1;
    int origin = -1;  // Pending: the graph node that computed it (names the layer, places errors)
  };

  // ---- running (lower_graph.cpp)
  void lower(const OpNode& n);
  [[noreturn]] void fail(const OpNode& n, const std::string& message, const std::string& hint = "") const;
  const Val& in(const OpNode& n, size_t i) const;   // input i (fails when absent)
  bool has_input(const OpNode& n, size_t i) const;
  bool is_const(const OpNode& n, size_t i) const;
  const OpConstant& constant(const OpNode& n, size_t i, const char* what) const;
  void set(const OpNode& n, size_t out, Val v);       // binds output `out` of n
  snn::Shape shape(const Val& v) const;              // per image
  snn::Shape input_shape(const OpNode& n, size_t i) const { return shape(in(n, i)); }
  int rank(const OpNode& n, size_t i) const { return int(input_shape(n, i).size()) + 1; }
  int64_t dim_arg(const OpNode& n, int64_t d, int rank) const;  // normalised full-rank dim
  // The network node standing for input i, materialising channel views and elementwise functions.
  int node_of(const OpNode& n, size_t i, const char* what);
  int materialise(const OpNode& n, int value);
  int add_layer(const OpNode& n, std::unique_ptr<snn::Layer> layer, const std::vector<int>& inputs, int value);
  std::string layer_name(const OpNode& n, const std::string& kind);
  void bind(int node, int value);  // the node's output equals graph value `value`
  Val node_val(int node) const;
  // The conv/linear node that input i is the only reader of, which may absorb a batch norm or an
  // affine map; nullptr otherwise.
  snn::Layer* foldable(const Val& v, int value);

  // ---- layers (lower_layers.cpp)
  void conv2d(const OpNode& n);
  void batch_norm(const OpNode& n);
  void linear(const OpNode& n);
  void matmul(const OpNode& n);
  void pool(const OpNode& n, bool max);
  void adaptive_avg_pool(const OpNode& n);
  void mean(const OpNode& n);
  void upsample(const OpNode& n);
  // ---- shapes and channels (lower_channels.cpp)
  void flatten(const OpNode& n);
  void reshape(const OpNode& n);
  void squeeze(const OpNode& n, bool un);
  void permute(const OpNode& n);
  void cat(const OpNode& n);
  void split(const OpNode& n);
  void slice(const OpNode& n);
  Val as_channels(const OpNode& n, size_t i);
  Val flatten_val(const OpNode& n, size_t i);
  Val regroup(const OpNode& n, const Val& x, const std::vector<int64_t>& per_image);  // or Kind::Unset
  // ---- elementwise (lower_elementwise.cpp)
  bool elementwise(const OpNode& n);  // false: not an elementwise op
  void residual_add(const OpNode& n);
  Val pending(const OpNode& n, size_t i);  // input i as an elementwise function (of itself when a node)
  int function_output(const OpNode& n, int value, const Val& v);  // materialise a Pending value
  int fold_affine(const OpNode& n, int value, const Val& v, const std::vector<float>& scale,
                  const std::vector<float>& shift);
  int neuron(const OpNode& n, int node, const ActivationFit& fit, const std::string& name);
  std::vector<double> per_channel(const OpNode& n, size_t i, int64_t channels, const Val& act);

  // Module runs the exporter decomposed beyond recognition, collapsed back into one op (lower_modules.cpp).
  std::vector<OpNode> collapse_modules() const;

  const OpGraph& g_;
  std::vector<OpNode> nodes_;  // g_'s nodes, with decomposed modules collapsed
  std::string file_;
  ImportOptions opts_;
  ImportReport* report_;
  snn::Network net_;
  std::vector<Val> vals_;        // per graph value
  std::vector<int> readers_;     // per graph value: inputs of nodes that read it (+1 for the output)
  std::vector<std::string> refs_;  // per network node: the graph value name it equals
  std::map<int, int> materialised_;  // graph value -> node made for it
  // (function, term) -> the graph value that term computes: names the reference of an affine layer
  // split off before a neuron.
  std::map<std::pair<const ElementwiseFunction*, int>, int> term_values_;
  std::map<std::vector<std::pair<int, int64_t>>, int> gathers_;
  std::set<std::string> names_;
};

}  // namespace snn::conversion::detail
