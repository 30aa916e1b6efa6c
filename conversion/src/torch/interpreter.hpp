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
    Const,  // known: number, bool, string, None, list, tensor (weights), module object
    Act,    // a tensor computed from the input image: activation `act`
    Batch,  // the batch size N (unknown here: the network is built per image)
    List,   // a list with a non-constant item, e.g. x.size() = [N, C, H, W]
    Tuple,  // a tuple with a non-constant item
  };
  Kind kind = Kind::Const;
  c10::IValue iv;          // Const
  int act = -1;            // Act
  std::vector<Val> items;  // List, Tuple

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
  bool is_act() const { return kind == Kind::Act; }
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
  int node_of(const Node* n, const Val& v, const char* what);  // the network node an Act stands for
  const snn::Shape& shape_of(int act) const;
  bool consumed(int node) const;     // some layer reads this node already
  // Adds a layer reading the given acts; returns the new act. Shape errors name the layer and hint at
  // the input shape.
  int add_layer(const Node* n, std::unique_ptr<snn::Layer> layer, const std::vector<int>& input_acts);

  // ---- tensor ops on activations (ops.cpp); false when the op is not one snnc knows
  bool run_tensor_op(Node* n, Frame& f, const std::vector<Val>& in);
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
};

}  // namespace snn::conversion::detail
