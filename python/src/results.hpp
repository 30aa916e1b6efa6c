// What net.simulate hands back: the anytime predictions, the readout, and the per-layer, per-step counts
// of one simulation of N images (several batches joined).
#pragma once
#include <string>
#include <vector>

#include "snn/tensor.hpp"

namespace snnc_py {

struct Simulation {
  int64_t timesteps = 0, images = 0;
  std::vector<int32_t> predictions;  // [T, N]: argmax of the readout summed over steps 1..t
  snn::Tensor readout;               // [N, K]: readout summed over all T steps
  std::vector<std::string> neuron_layers, weight_layers;
  std::vector<std::vector<double>> spikes;        // [L][T], totals over the images
  std::vector<std::vector<double>> synaptic_ops;  // [W][T]
  std::vector<std::vector<double>> dense_macs;    // [W][T]
};

}  // namespace snnc_py
