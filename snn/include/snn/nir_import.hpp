// NIR import: a feed-forward NIR graph (nir_graph.hpp reads the file) as an snn::Network, the inverse of
// nir_export.hpp. NIR's continuous-time neurons are read in discrete time with step dt (dt = 1 unless
// told: NIR files do not record it; snnTorch and SpikingJelly write with dt = 1e-4, Norse's LIFBox with
// an effective 1e-6, Norse's IAF, Sinabs and snnc with 1):
//   Input [C,H,W]    the network input (a leading batch 1 is dropped; normalise_mean/std metadata, as
//                    snnc's export writes it, become the preprocessing; a flat Input [N] takes images of
//                    `input_shape` through a Flatten)
//   Conv2d, Affine, Linear   conv2d (dilation 1), linear
//   IF               v ← v + dt·r·I; z = [v > θ]; v ← 0 after a spike   → IF neuron, reset to zero
//   LIF              v ← v + dt/τ·(v_leak − v + r·I)                     → LIF neuron, β = 1 − dt/τ, input
//                    gain dt·r/τ, bias −dt/τ·v_leak (constant over time)
//   Scale            a per-channel factor, AvgPool2d, SumPool2d (= average · k_h·k_w), Flatten
//   a node with several incoming edges sums them (residual adds);  Output: the readout
// snnc's neuron fires v ≥ θ with spikes of θ; NIR's fire v > θ with spikes of 1. The neuron keeps θ and
// its membrane (the input gain r, when not 1, is folded into the conv/linear layer feeding it alone,
// else a channel_affine layer); the factor 1/θ its spikes owe the graph travels with the value and is
// folded into the next weight layer, cancelled by a Scale θ (snnc's own export), or applied by a
// channel_affine layer where values meet (a sum, the readout). A neuron as the last node becomes an
// identity readout (flatten) summing its 0/1 spikes. Refused, naming the node: every other node type
// (CubaLIF, LI, I, Delay, Threshold, Conv1d, ...), nested graphs, cycles, v_reset ≠ 0, parameters not
// constant per channel, a leak that differs between channels, dt/τ outside (0, 1].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/network.hpp"

namespace snn {

struct NirImportOptions {
  double dt = 1.0;     // the step NIR's continuous-time neurons (IF: dv/dt = r·I; LIF) are read with
  double if_dt = 0.0;  // IF nodes only, where a writer meant r per step while its LIF τ needs another dt
                       // (Norse: IAF r = 1 per step, LIFBox τ for an effective 1e-6); 0: dt
  Shape input_shape;  // the images' shape where the graph's Input is flat ([N] = C·H·W); empty: none
};

struct NirImportReport {
  int64_t nodes = 0, edges = 0;
  std::vector<std::string> notes;  // what was folded or added, per node
};

// Reads a NIR graph file. Throws snn::Error naming the file and the node for what snnc cannot run.
Network import_nir(const std::string& path, const NirImportOptions& options = {}, NirImportReport* report = nullptr);

}  // namespace snn
