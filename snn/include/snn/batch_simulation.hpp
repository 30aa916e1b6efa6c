// What one simulation of B images over T steps produces, on any backend. Counts are totals over the batch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/tensor.hpp"

namespace snn {

struct BatchSimulation {
  int64_t timesteps = 0;
  int64_t batch = 0;
  // predictions[t * batch + b]: argmax of the readout summed over steps 1..t+1 (the anytime prediction).
  std::vector<int32_t> predictions;
  Tensor readout;  // [B, K]: readout summed over all T steps
  // Per neuron layer (Network::neuron_nodes order), per step: spikes emitted.
  std::vector<std::vector<double>> spikes;
  // Per weight layer (nodes with macs > 0, in order), per step: accumulates driven by events (spikes,
  // pooled spikes) and multiply-accumulates on analog inputs (the encoded image, membrane currents).
  std::vector<int> weight_nodes;
  std::vector<std::vector<double>> synaptic_ops;
  std::vector<std::vector<double>> dense_macs;

  // Per node (network order), where the backend measures it (the CPU backend does; empty otherwise):
  // wall seconds spent in the node's kernel over all chunks (static nodes: their one run), the path
  // its kernel took on the last chunk ("dense", "events", or empty for single-path kernels), and the
  // non-zero fraction of its first input on that chunk where the kernel measured it (else negative).
  struct NodeProfile {
    double seconds = 0.0;
    std::string path;
    double input_density = -1.0;
    bool channels_last = false;  // CPU: the node ran (wrote its output) channels-last
  };
  std::vector<NodeProfile> profile;
};

}  // namespace snn
