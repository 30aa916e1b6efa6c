// TorchScript import: turns a trained PyTorch CNN saved with torch.jit.script or torch.jit.trace into
// an snn::Network (weight layers + neuron layers standing in for the activations).
//
// The model's forward is run *symbolically*: every TorchScript value is either a constant (weights,
// ints, lists, module objects — folded as the code runs, so `if self.training:` and shape checks take
// their eval-mode branch) or a tensor that depends on the input image, which maps to a node of the
// network being built. Supported: conv2d (stride, padding, groups; no dilation), batch_norm (folded
// into the conv/linear before it where nothing else reads that layer's output, else a ChannelAffine
// layer, as DenseNet's pre-activation needs), relu (module and functional), hardtanh/relu6/clamp with
// min 0 (clip), avg/max pooling (ceil_mode, count_include_pad), adaptive average pooling (uneven
// windows too), global mean, nearest upsampling, flatten/view/reshape/squeeze to [N, -1], linear (also
// addmm/matmul + bias), add of two tensors (residuals), dropout/contiguous/detach/to(float) (identity),
// and the ops that only move channels: cat, chunk, split, channel slicing and the channel shuffle
// (view to [N, g, C/g, H, W], transpose, view back), which become ChannelGather layers. A constant
// per-channel tensor added right after a conv/linear becomes its bias. A forward returning a tuple
// whose other items are None (scripted GoogLeNet/Inception in eval mode) returns its tensor.
//
// Reference values: given check images, the importer also runs every op with LibTorch on them as it
// goes, and hands back each node's LibTorch value (the ANN view must reproduce it: faithfulness.hpp). A submodule whose class name
// contains "QCFS" or "ClipFloor" with a parameter `thresh` (or `up`) and an int attribute `L` becomes one
// QCFS neuron layer. Anything else is an snn::Error naming the op, the module and the source line.
//
// This header does not include LibTorch; only the snn_torch_import library does (SNN_HAVE_TORCH).
#pragma once
#include <string>
#include <vector>

#include "snn/network.hpp"
#include "snn/neuron_core.hpp"
#include "snn/tensor.hpp"

namespace snn::conversion {

struct ImportOptions {
  snn::Shape input_shape;    // per-image [C, H, W]; required
  snn::NeuronConfig neuron;  // neuron model of every activation layer
  // Preprocessed check images [K, C, H, W]; when given, the report holds LibTorch's value of every node.
  snn::Tensor reference_inputs;
};

struct ImportReport {
  int batchnorms_folded = 0;
  int activations = 0;        // neuron layers created
  int relu_layers = 0;        // of which ReLU (provisional θ = 1: set thresholds from data)
  int max_pools = 0;
  std::vector<std::string> ops;    // distinct TorchScript node kinds met while importing, sorted
  std::vector<std::string> notes;  // what was folded, recognised or assumed, one line each
  // With reference inputs: per node, LibTorch's value on them ([K, node shape]; empty where an op made
  // a node whose value PyTorch never computes on its own), and the model's output.
  std::vector<snn::Tensor> references;
  snn::Tensor reference_output;
  // Native readers (ONNX, .pt2; lower_graph.hpp): per node, the name of the graph value whose runtime
  // value the node's output equals ("" where none), and the graph's output name. A reference runtime
  // fills `references` from these names (reference_runtime.hpp).
  std::vector<std::string> reference_names;
  std::string reference_output_name;
  std::string format;    // "TorchScript", "ONNX", "torch.export (.pt2)"
  std::string producer;  // what wrote the file, when it says
};

// Imports the model at `path`. Throws snn::Error naming the file (and op/module/line where it applies).
snn::Network import_torchscript(const std::string& path, const ImportOptions& options, ImportReport* report = nullptr);

// LibTorch's own forward of the model on already preprocessed inputs [N, C, H, W]; returns [N, K].
// For the faithfulness check (ANN view vs PyTorch).
snn::Tensor torchscript_forward(const std::string& path, const snn::Tensor& input);

// The LibTorch version snnc was built with ("2.15.0").
std::string libtorch_version();

}  // namespace snn::conversion
