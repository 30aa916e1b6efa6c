// Private to snn_torch_import: the symbolic interpreter that turns a TorchScript module into an
// snn::Network. interpreter.cpp runs the graphs (constants, lists, control flow, method and function
// calls, error locations); ops.cpp maps the tensor ops on activations to snn layers.
//
// Why interpret instead of pattern-matching an inlined graph: scripted modules carry eval/training
// branches, shape checks and helper calls (F.relu, _check_input_dim) that are only plain once their
// constant inputs are known; walking prim::CallMethod ourselves also gives every op its module path
// (layer names, error messages) and lets QCFS-like submodules be recognised by class before their
// bodies are seen.
#pragma once
#include <torch/script.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "snn/conversion/torch_import.hpp"
#include "snn/error.hpp"
#include "snn/layer.hpp"
#include "snn/network.hpp"

namespace snn::conversion::detail {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// An error that already names the file and the place in the model.
class ImportError : public snn::Error {
 public:
  using snn::Error::Error;
};

// What a TorchScript value stands for during the symbolic run.
struct Val {
  enum class Kind {
    Const,     // known: number, bool, string, None, list, tensor (weights), module object
    Act,       // a tensor computed from the input image: activation `act`
    Channels,  // a tensor that only rearranges channels of earlier activations (cat, chunk, shuffle views)
    Batch,     // the batch size N (unknown here: the network is built per image)
    List,      // a list with a non-constant item, e.g. x.size() = [N, C, H, W]
    Tuple,     // a tuple with a non-constant item
  };
  Kind kind = Kind::Const;
  c10::IValue iv;          // Const
  int act = -1;            // Act
  std::vector<Val> items;  // List, Tuple
  c10::TypePtr type;       // List, Tuple: the TorchScript type (to rebuild the concrete value)
  // Channels: logical channel c is channel channels[c].second of act channels[c].first; the logical
  // per-image shape is dims ++ spatial (dims: one entry, or several while a shuffle views [g, C/g]).
  // Materialised as one ChannelGather layer only when an op needs it as a tensor (node_of), so a
  // concatenation followed by a shuffle and a split costs one copy, or none.
  std::vector<std::pair<int, int64_t>> channels;
  std::vector<int64_t> dims;
  snn::Shape spatial;
  int view_id = -1;  // identifies a Channels value across copies (for in-place ops on it)
  std::string origin;  // Channels: module path of the op that made it (names the gather layer)
  // Act, Channels: the value LibTorch computes on the check images, [K, logical shape...]; undefined
  // when the import runs without reference inputs.
  at::Tensor real;

  static Val constant(c10::IValue v) {
    Val r;
    r.iv = std::move(v);
    return r;
  }
  static Val activation(int a) {
    Val r;
    r.kind = Kind::Act;
    r.act = a;
    return r;
  }
  static Val batch() {
    Val r;
    r.kind = Kind::Batch;
    return r;
  }
  bool is_const() const { return kind == Kind::Const; }
  bool is_act() const { return kind == Kind::Act || kind == Kind::Channels; }  // computed from the input
  bool is_none() const { return kind == Kind::Const && iv.isNone(); }
};

// Readers of constant arguments; they throw snn::Error, which run_node turns into a located error.
int64_t as_int(const Val& v, const char* what);
double as_double(const Val& v, const char* what);  // int, float, or a one-element tensor
bool as_bool(const Val& v, const char* what);
std::vector<int64_t> as_ints(const Val& v, const char* what);
std::vector<int64_t> as_pair(const Val& v, const char* what);  // int or int[1] or int[2] -> 2 values
at::Tensor as_tensor(const Val& v, const char* what);
snn::Tensor to_snn_tensor(const at::Tensor& t);
std::vector<float> to_floats(const at::Tensor& t);

// One function activation: the module it runs in and the local values.
struct Frame {
  std::string path;        // module path: "" for the top-level module, "layer1.conv1"
  std::string class_name;  // short class name, e.g. "Conv2d"
  std::string function;    // "Conv2d.forward", or a free function's name
  bool leaf = false;       // module without submodules: the layers it makes are named after it
  const Node* call_site = nullptr;
  std::unordered_map<const Value*, Val> env;
};

class Interpreter {
 public:
  Interpreter(std::string file, ImportOptions options, ImportReport* report);
  snn::Network run(torch::jit::Module& module);

 private:
  // ---- running graphs (interpreter.cpp)
  std::vector<Val> call_graph(Graph& graph, std::vector<Val> args, Frame frame);
  std::vector<Val> run_block(Block* block, Frame& f, const std::vector<Val>& inputs);
  void run_node(Node* n, Frame& f);
  void dispatch(Node* n, Frame& f, const std::vector<Val>& in);
  void run_if(Node* n, Frame& f, const std::vector<Val>& in);
  void run_loop(Node* n, Frame& f, const std::vector<Val>& in);
  void call_method(Node* n, Frame& f, const std::vector<Val>& in);
  void call_function(Node* n, Frame& f, const std::vector<Val>& in);
  bool const_eval(Node* n, Frame& f, const std::vector<Val>& in);
  Val get(Frame& f, const Value* v) const;
  void set_outputs(Node* n, Frame& f, std::vector<Val> outs);
  std::string module_path(const c10::intrusive_ptr<c10::ivalue::Object>& obj) const;
  void check_module_tree(torch::jit::Module& module);

  // ---- errors and names
  // Throws ImportError: "FILE: message in module 'x' (Class) at file.py:12: `code`; hint".
  [[noreturn]] void fail(const Node* n, const std::string& message, const std::string& hint = "") const;
  std::string where(const Node* n) const;  // " in module 'x' (Class) at file:line: `code`"
  std::string layer_name(const std::string& op);

  // ---- the network being built
  struct Act {
    int node;  // network node, or snn::Network::kInput
    int gen;   // the node's generation when this act was made (see gen_)
  };
  int new_act(int node);
  int resolve(int act) const;        // follows in-place replacements
  // The network node a tensor value stands for; a Channels value is materialised as a ChannelGather.
  int node_of(const Node* n, const Val& v, const char* what);
  const snn::Shape& shape_of(int act) const;
  snn::Shape logical_shape(const Val& v) const;  // per image, without the batch dimension
  bool consumed(int node) const;     // some layer reads this node already
  // Adds a layer reading the given acts; returns the new act. Shape errors name the layer and hint at
  // the input shape.
  int add_layer(const Node* n, std::unique_ptr<snn::Layer> layer, const std::vector<int>& input_acts);

  // ---- reference values: the model run by LibTorch on the check images alongside (reference.cpp)
  bool reference_mode() const { return reference_inputs_.defined(); }
  c10::IValue concrete(const Val& v) const;  // the LibTorch value of v on the check images
  // Runs n with LibTorch on the concrete inputs; its outputs (empty outside reference mode).
  std::vector<c10::IValue> run_concrete(Node* n, const std::vector<Val>& in);
  void attach_real(Val& v, const c10::IValue& real) const;  // sets v.real (recursively for lists)
  // Gives nodes created or folded since `first_new_node` / `gens_before` their LibTorch reference from
  // the op's output value.
  void record_references(const Val& out, int first_new_node, const std::vector<int>& gens_before);
  void set_reference(int node, const at::Tensor& real);

  // ---- tensor ops on activations (ops.cpp); false when the op is not one snnc knows
  bool run_tensor_op(Node* n, Frame& f, const std::vector<Val>& in);
  // The symbolic result of a tensor op, or nullopt when snnc does not know the op.
  c10::optional<Val> tensor_op(Node* n, const std::string& k, const std::vector<Val>& in);
  Val op_conv(Node* n, const std::vector<Val>& in);
  Val op_batch_norm(Node* n, const std::vector<Val>& in);
  Val op_activation(Node* n, const std::string& kind, const std::vector<Val>& in);
  Val op_pool(Node* n, const std::string& kind, const std::vector<Val>& in);
  Val op_adaptive_avg_pool(Node* n, const std::vector<Val>& in);
  Val op_mean(Node* n, const std::vector<Val>& in);
  Val op_flatten(Node* n, const std::vector<Val>& in);
  Val op_view(Node* n, const std::vector<Val>& in);
  Val op_squeeze(Node* n, const std::vector<Val>& in);
  Val op_linear(Node* n, const std::string& kind, const std::vector<Val>& in);
  Val op_add(Node* n, const std::vector<Val>& in);
  Val op_upsample(Node* n, const std::string& k, const std::vector<Val>& in);
  // ---- ops that only move channels (channel_ops.cpp): lazy Channels values
  Val as_channels(const Node* n, const Val& v);  // any tensor value as a Channels value
  Val channel_subset(const Val& x, int64_t begin, int64_t end, int64_t step);
  int materialise(const Node* n, const Val& v);  // node of a Channels value
  Val op_cat(Node* n, const std::vector<Val>& in);
  Val op_split(Node* n, const std::string& k, const std::vector<Val>& in);
  Val op_slice(Node* n, const std::string& k, const std::vector<Val>& in);
  Val op_transpose(Node* n, const std::string& k, const std::vector<Val>& in);
  // A view/reshape/flatten that regroups channel dims and keeps H, W: a Channels value; else nullopt.
  c10::optional<Val> channel_view(Node* n, const Val& x, const std::vector<int64_t>& shape);
  Val neuron(Node* n, const Val& x, snn::SourceActivation act, std::vector<float> theta, int levels,
             const std::string& name);
  Val flatten_act(Node* n, const Val& x);
  // A submodule recognised as QCFS by its class name; replaces running its forward.
  void qcfs_module(Node* n, Frame& f, const c10::intrusive_ptr<c10::ivalue::Object>& obj, const Val& x);

  std::string file_;
  ImportOptions opts_;
  ImportReport* report_;
  snn::Network net_;
  std::vector<Act> acts_;
  std::vector<int> replaced_;  // per act: the act an in-place op replaced it with, or -1
  std::vector<int> gen_;       // per node: bumped when a batch norm or bias is folded into it
  std::map<const c10::ivalue::Object*, std::string> paths_;
  std::set<std::string> names_;
  std::set<std::string> ops_;
  std::vector<const Frame*> stack_;
  std::map<std::vector<std::pair<int, int64_t>>, int> gathers_;  // (node, channel) list -> gather act
  std::map<int, int> replaced_views_;  // view_id of a Channels value -> the act an in-place op made of it
  int next_view_id_ = 0;
  at::Tensor reference_inputs_;              // [K, C, H, W], or undefined
  std::vector<snn::Tensor> references_;      // per node: LibTorch's value on the check images
};

}  // namespace snn::conversion::detail
