// OpGraph: the format-neutral graph every model reader hands to the lowering (lower_graph.hpp).
//
// A reader (ONNX, torch.export .pt2) parses its file, resolves what is format-specific (ONNX's Constant
// and Shape arithmetic, auto_pad, Gemm's transposes; ATen's overloads, scalar arguments, tuple outputs
// and getitem) and emits a flat, topologically ordered list of *canonical ops* over values. The lowering
// then maps canonical ops to snn layers once for every format: batch-norm folding, neurons from
// activation functions (including QCFS spelled as its ops), channel gathers, faithfulness references.
//
// Conventions:
//  - Shapes, dims and axes are full-rank, batch included (dim 0 is the batch, whatever its size in the
//    exported graph: `batch` below). Negative dims count from the end, as in PyTorch.
//  - A constant value has `constant` set (weights, scalars, per-channel tensors). Scalar arguments that a
//    format passes as numbers (ATen's mul.Tensor(x, 8)) become constant values of shape [].
//  - An optional input that is absent is -1 (conv2d without bias).
//  - An op the reader does not map keeps its own name in `op` ("Sigmoid", "aten.sigmoid.default"): the
//    lowering refuses it naming the op, the node and the format.
//
// Canonical ops (inputs by position; attributes by name; "ints" are std::vector<int64_t>):
//   conv2d           [x, weight, bias?]        stride[2], padding[4] (top, left, bottom, right),
//                                              dilation[2], groups
//   batch_norm       [x, weight?, bias?, running_mean, running_var]   eps (float)
//   linear           [x, weight [out, in], bias?]    (x·Wᵀ + b; readers fold Gemm/addmm/matmul transposes)
//   matmul           [a, b]                    one side constant 2-D: the lowering turns it into linear
//   relu             [x]
//   clamp            [x]                       min, max (floats; an absent attribute is unbounded)
//   add, sub, mul, div, maximum, minimum  [a, b]   elementwise with broadcasting; either may be constant
//   floor, ceil, round, neg                [x]
//   identity         [x]                       dropout (eval), detach, clone, contiguous, to(float), alias
//   avg_pool2d       [x]                       kernel[2], stride[2], padding[4], ceil_mode, count_include_pad
//   max_pool2d       [x]                       kernel[2], stride[2], padding[4], dilation[2], ceil_mode
//   adaptive_avg_pool2d [x]                    output_size[2]
//   mean             [x]                       dims (ints), keepdim
//   flatten          [x]                       start_dim, end_dim
//   reshape          [x]                       shape (ints; -1 allowed once; dim 0 may be -1 or `batch`)
//   squeeze          [x]                       dims (ints; empty: every dim of size 1 but the batch)
//   unsqueeze        [x]                       dims (ints)
//   permute          [x]                       perm (ints, full rank)
//   cat              [x0, x1, ...]             dim
//   split            [x]  -> several outputs   dim, sizes (ints, one per output)
//   slice            [x]                       dim, start, end, step (end may exceed the size: clamped)
//   upsample_nearest [x]                       output_size[2], scales (floats[2]; 0 = not given), exact
// Integer attributes that are booleans (ceil_mode, keepdim, exact) are 0/1.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "snn/tensor.hpp"

namespace snn::conversion {

// A constant tensor: float data, or int64 data (shapes, indices) when is_int.
struct OpConstant {
  snn::Shape shape;             // [] for a scalar
  std::vector<float> values;    // float constants
  std::vector<int64_t> ints;    // int constants
  bool is_int = false;
  int64_t numel() const { return snn::numel_of(shape); }
  snn::Tensor tensor() const;   // float view (ints converted); throws for an int tensor too large
  static OpConstant scalar(double v);
  static OpConstant of(snn::Shape shape, std::vector<float> values);
};

using OpAttr = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

struct OpValue {
  std::string name;             // the format's own name (ONNX value name, FX node name): names the
                                // reference value the faithfulness check asks the runtime for
  bool is_constant = false;
  OpConstant constant;          // when is_constant
  snn::Shape shape;             // full-rank shape as the file declares it; empty when unknown
};

struct OpNode {
  std::string op;               // canonical op, or the format's own op name when unmapped
  std::vector<int> inputs;      // value ids (-1: an absent optional input)
  std::vector<int> outputs;     // value ids
  std::map<std::string, OpAttr> attrs;
  std::string name;             // node name in the file ("conv2d_1", "/features/features.0/Conv")
  std::string source_op;        // the format's op ("aten.conv2d.default", "Conv")
  std::string scope;            // module path when the file records it ("features.3"), else ""
  std::string scope_class;      // that module's class name when recorded ("QCFS"), else ""

  bool has(const std::string& key) const { return attrs.count(key) > 0; }
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;  // ints are accepted too
  std::vector<int64_t> get_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<double> get_floats(const std::string& key, std::vector<double> fallback = {}) const;
};

struct OpGraph {
  std::string format;           // "ONNX" or "torch.export (.pt2)": used in messages and provenance
  std::string producer;         // what wrote the file ("pytorch 2.15.0", "onnx opset 18, pytorch 2.15.0")
  std::vector<OpValue> values;
  std::vector<OpNode> nodes;    // topological order
  int input = -1;               // the image input value ([batch, C, H, W])
  int output = -1;              // the logits value
  int64_t batch = 1;            // the batch size the graph was exported with (dim 0 of the input)
  std::vector<std::string> notes;  // what the reader assumed or ignored, one line each

  int add_value(OpValue v);
  int add_constant(std::string name, OpConstant c);
  // "node 'conv2d_1' (aten.conv2d.default, module 'features.0')": for messages.
  std::string describe(const OpNode& n) const;
};

// Helpers for readers.
OpConstant transpose2d(const OpConstant& c);  // [a, b] -> [b, a]; throws unless 2-D float

}  // namespace snn::conversion
