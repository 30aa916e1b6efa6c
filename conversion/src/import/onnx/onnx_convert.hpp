// The ONNX graph -> OpGraph conversion: state shared by the op handlers (ops_*.cpp). One Converter per
// file; handlers read the current node's inputs (constants or values with static shapes) and emit
// canonical OpNodes (op_graph.hpp) or fold constants.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "import/onnx/onnx_model.hpp"
#include "import/onnx/onnx_tensor.hpp"
#include "snn/error.hpp"
#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion::onnx {

class Converter;
using Handler = void (*)(Converter&, const Node&);
using HandlerTable = std::map<std::string, Handler>;
void add_nn_handlers(HandlerTable& table);      // ops_layers.cpp: norms, activations, linear, resize, pad
void add_pool_handlers(HandlerTable& table);    // ops_conv_pool.cpp: conv, pools, reduce-mean
void add_tensor_handlers(HandlerTable& table);  // ops_tensor.cpp: constants, casts, elementwise
void add_shape_handlers(HandlerTable& table);   // ops_shape.cpp: reshape, transpose, concat, split, slice

// Runs a fold, turning its errors (snn::Error without a path) into errors naming the file and node.
template <class F>
OpConstant folded(const Converter& c, F f);
// Shape of input i: a constant's shape, a value's static shape, or empty when unknown.
snn::Shape known_shape(const Converter& c, size_t i);
// An axis in [-rank, rank) made non-negative; fails naming the node otherwise.
int64_t axis_in(const Converter& c, int64_t axis, size_t rank);

class Converter {
 public:
  Converter(const std::string& path, const Model& model);
  OpGraph run();

  // --- for handlers: the current node ---
  const std::string& path() const { return path_; }
  int64_t opset() const { return opset_; }
  int64_t batch() const { return graph_.batch; }
  bool has_input(size_t i) const;                 // present and not ""
  int input(size_t i) const;                      // value id; -1 when absent
  bool is_const(int id) const { return id >= 0 && graph_.values[size_t(id)].is_constant; }
  bool all_inputs_const() const;
  const OpConstant& constant(size_t i) const;     // input i, which must be a constant (else fail)
  std::vector<int64_t> const_ints(size_t i) const;  // input i as integers (constant, else fail)
  const snn::Shape& shape(int id) const { return graph_.values[size_t(id)].shape; }
  snn::Shape input_shape(size_t i) const;         // static shape of input i (constant or value), else fail
  bool output_used(size_t i) const;               // consumed by a node or a graph output
  const std::vector<const Node*>& consumers(size_t i) const;  // the nodes reading output i
  bool is_graph_output(size_t i) const;

  // Attributes (with ONNX defaults given by the caller).
  bool has_attr(const std::string& name) const { return node_->find(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> attr_floats(const std::string& name, std::vector<double> fallback = {}) const;
  const Tensor* attr_tensor(const std::string& name) const;
  OpConstant tensor_constant(const Tensor& t, const std::string& what) const;

  // Results. Output i of the current node becomes a constant, or a new value of the given shape.
  void bind_constant(size_t i, OpConstant c);
  int new_constant(const std::string& suffix, OpConstant c);  // a derived constant ("<node>/weight")
  OpNode& emit(const std::string& op, std::vector<int> inputs, std::vector<snn::Shape> out_shapes);
  // An intermediate value between two emitted nodes (a multi-axis Slice as one slice per axis).
  int add_intermediate(const std::string& suffix, snn::Shape shape);
  OpNode& emit_into(const std::string& op, std::vector<int> inputs, std::vector<int> outputs);
  int output_value(size_t i, snn::Shape shape);   // creates (once) the value of output i
  // The node stays as an op the lowering refuses: `op` names it ("Resize(mode=linear)"); `why` goes to notes.
  void unmapped(const std::string& op, const std::string& why = "");
  void note(const std::string& line) { graph_.notes.push_back(line); }
  // Pad folded into its consumer: the Pad output is an alias of its input plus pads (top, left, bottom, right).
  void defer_pad(size_t out, int source, std::vector<int64_t> pads) { pads_[node_->outputs[out]] = {source, pads}; }
  bool take_pad(size_t in, int& source, std::vector<int64_t>& pads) const;

  [[noreturn]] void fail(const std::string& message) const;  // "PATH: node 'n' (Op): message"

 private:
  void add_inputs_and_initializers();
  void declare_shapes();
  void convert_node(const Node& n, const HandlerTable& table);
  void set_scope(OpNode& op) const;
  void finish_output();
  void prune();
  std::string producer() const;

  std::string path_;
  const Model& model_;
  int64_t opset_ = 0;
  OpGraph graph_;
  const Node* node_ = nullptr;
  std::map<std::string, int> ids_;                 // ONNX value name -> value id
  std::map<std::string, std::vector<const Node*>> consumers_;  // ONNX value name -> nodes reading it
  std::map<std::string, snn::Shape> declared_;     // value_info/output declarations (static dims only)
  std::map<std::string, std::pair<int, std::vector<int64_t>>> pads_;
  TensorSource tensors_;
};

// Pads [top, left, bottom, right] for auto_pad SAME_UPPER/SAME_LOWER along two spatial dims.
std::vector<int64_t> same_pads(const std::string& mode, const snn::Shape& in_hw, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations);

template <class F>
OpConstant folded(const Converter& c, F f) {
  try {
    return f();
  } catch (const snn::Error& e) {
    c.fail(std::string("cannot evaluate it on its constant inputs: ") + e.what());
  }
}

}  // namespace snn::conversion::onnx
