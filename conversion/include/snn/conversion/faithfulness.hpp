// The faithfulness check: does the imported network compute what the PyTorch model computes?
//
// Layer by layer: each node is run on the reference runtime's own values of its inputs (LibTorch's, which
// the TorchScript importer records, torch_import.hpp; torch's or onnxruntime's for .pt2 / ONNX,
// reference_runtime.hpp) and its output compared with the runtime's value of the node. So every node is
// judged on its own, and a failure names the first layer that departs, not the logits. Judged relative
// to the node's scale (max |reference|), because float summation order alone moves deep networks' large
// values by more than any absolute yardstick allows:
//   - weight, pooling, gather... nodes: max |ours − LibTorch| ≤ tolerance · scale;
//   - quantised activations (QCFS): elements that moved by a level are counted, and pass while their
//     fraction is at most max_moved_fraction (a pre-activation on a step edge rounds either way);
//   - ReLU/clip activations: as weight nodes.
// End to end (informative): the ANN view run through, against LibTorch's logits — max difference
// relative to the logits' scale, and argmax agreement; and per node the drift of the ANN view from
// LibTorch (a folded batch norm moves a QCFS pre-activation across a step now and then; that is
// rounding, not a wrong import, and shows here, not in the layer check).
//
// Core only (no LibTorch): the references come in as tensors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/backend.hpp"
#include "snn/network.hpp"

namespace snn::conversion {

struct FaithfulnessOptions {
  double tolerance = 1e-3;           // relative to each node's scale
  double max_moved_fraction = 1e-3;  // quantised activations: elements allowed to move by a level
};

struct NodeFaithfulness {
  int node = 0;
  std::string name, type;
  bool checked = false;       // false: no LibTorch value for this node (see unchecked in the report)
  bool quantised = false;     // a QCFS activation: judged by moved_fraction
  double scale = 0;           // max |LibTorch value|
  double max_abs_diff = 0;    // the node on LibTorch's inputs vs LibTorch's output
  double rel_diff = 0;        // max_abs_diff / scale
  double moved_fraction = 0;  // quantised: fraction of elements off by more than tolerance·θ
  double drift_rel = 0;       // the whole ANN view vs LibTorch at this node, relative to scale
  double drift_moved_fraction = 0;  // quantised: fraction of elements the whole ANN view moved
  bool passed = true;
};

struct FaithfulnessReport {
  FaithfulnessOptions options;
  std::string reference = "LibTorch";  // the runtime the references came from, for the messages
  int64_t layer_images = 0;     // images the layer-by-layer check ran on
  std::vector<NodeFaithfulness> nodes;
  int checked = 0, unchecked = 0;
  int first_failure = -1;       // index into nodes, or -1
  double worst_rel_diff = 0;    // over non-quantised checked nodes
  std::string worst_layer;
  double worst_moved_fraction = 0;  // over quantised nodes (layer check)
  double worst_drift_moved_fraction = 0;  // over quantised nodes (end to end)
  int quantised_layers = 0;
  // End to end on `output_images` images.
  int64_t output_images = 0;
  double output_max_abs_diff = 0, output_rel_diff = 0;
  int64_t argmax_agree = 0;
  bool passed() const { return first_failure < 0; }
  // "max |snnc − LibTorch| = ... at layer 'x' (type) ..." for the first failing node; "" when passed.
  std::string failure() const;
  // One line of figures: layers checked, worst relative error, quantised moves, logits, argmax.
  std::string summary() const;
};

// Layer by layer: `inputs` are the preprocessed check images [K, C, H, W] the importer ran LibTorch on,
// `references` LibTorch's value of every node on them (empty tensors: not checked). The ANN view runs on
// `backend` for the drift figures; each node's own check runs on the CPU kernels (the reference
// backend). The network's own preprocessing is ignored (inputs are already preprocessed).
FaithfulnessReport check_layers(const Network& net, const Tensor& inputs, const std::vector<Tensor>& references,
                                Backend& backend, const FaithfulnessOptions& options = {});

// End to end: the ANN view on `inputs` (preprocessed) against LibTorch's outputs `reference` [N, K];
// fills the output_* and argmax figures of `report`.
void compare_outputs(const Network& net, const Tensor& inputs, const Tensor& reference, Backend& backend,
                     FaithfulnessReport& report);

}  // namespace snn::conversion
