// NIR export: a converted network as a NIR graph (the Neuromorphic Intermediate Representation, an HDF5
// graph that Sinabs, Rockpool, snnTorch, Norse and hardware toolchains read). Layout, as NIR's
// nir.write: dataset /version, group /node (type "NIRGraph") with /node/nodes/<name> groups (a "type"
// dataset and the node's parameters) and /node/edges [E, 2] (source, target names). A node with several
// incoming edges sums them, which is how residual adds are written.
//
// Mapping (discrete time, dt = 1; docs in README "NIR export"):
//   input           Input (shape [C, H, W]: the *normalised* image; mean/std in the node's metadata)
//   conv2d          Conv2d (weight, bias, stride, padding, dilation 1, groups, input_shape)
//   linear          Affine (weight, bias)
//   neuron, IF      IF (r = 1, v_threshold = θ, v_reset = 0) then Scale (θ): snnc's spikes carry θ
//   neuron, LIF     LIF (τ = 1/(1−β), r = τ, v_leak = 0, v_threshold = θ, v_reset = 0) then Scale (θ):
//                   Euler with dt = 1 gives v ← (1 − 1/τ)·v + (r/τ)·I = β·v + I, snnc's update
//   avgpool2d       AvgPool2d (adaptive: when the windows are even)
//   flatten         Flatten;  add: no node, both inputs' edges go to its readers;  readout: Output
// What NIR cannot express is refused, naming the layer and what to change: reset by subtraction (NIR's
// IF/LIF reset to v_reset: convert with --reset zero), a starting membrane v_init·θ ≠ 0 (--v-init 0),
// per-step biases from calibration (unless mean_bias: their mean over steps, folded into the bias of
// the conv/linear layer feeding the neuron, recorded in the file; a bias constant over time, as light
// calibration's, is folded so always: exact), max pooling (snnc's spiking max-pool
// rule has no NIR node), and the other layer types. NIR fires on v > θ, snnc on v ≥ θ: the two differ
// only when a membrane lands exactly on θ.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/network.hpp"

namespace snn {

struct NirExportOptions {
  bool mean_bias = false;  // approximate calibration biases by their mean over steps (recorded)
};

struct NirExportReport {
  int64_t nodes = 0, edges = 0;
  std::vector<std::string> approximations;  // what mean_bias changed, per layer
};

// Writes `path` atomically. Throws snn::Error naming the layer for what NIR cannot express.
NirExportReport export_nir(const Network& net, const std::string& path, const NirExportOptions& options = {});

}  // namespace snn
