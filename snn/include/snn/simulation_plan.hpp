// The simulation plan: what every backend needs to know before it runs a network in the SNN view, worked
// out once in the core so backends agree. Which nodes are static (stateless and fed only by the
// direct-encoded input: computed once for all timesteps), which outputs are event streams (spikes, or
// pooled/flattened/added spikes: the next weight layer does accumulates), the weight layers and their
// MACs, the neuron layers, and how many timesteps one chunk holds within the memory budget.
#pragma once
#include <cstdint>
#include <vector>

#include "snn/network.hpp"
#include "snn/simulation_options.hpp"

namespace snn {

struct SimulationPlan {
  int64_t timesteps = 0;
  int64_t batch = 0;
  int64_t chunk_steps = 1;  // timesteps per chunk (the last chunk may be shorter)
  bool direct = true;       // direct encoding: the network input is the same at every step
  int output_node = -1;
  int64_t classes = 0;
  int64_t bytes_per_image_step = 0;  // activations of the dynamic nodes for one image at one step

  std::vector<char> is_static;   // per node
  std::vector<char> events;      // per node: the output is an event stream
  std::vector<int64_t> macs;     // per node: ANN multiply-accumulates per sample (0: not a weight layer)
  std::vector<int> neuron_nodes;  // Network::neuron_nodes()
  std::vector<int> weight_nodes;  // nodes with macs > 0, in order
  std::vector<int> neuron_slot;   // per node: index in neuron_nodes, or -1
  std::vector<int> weight_slot;   // per node: index in weight_nodes, or -1

  // Static-ness and event-ness of any node's output, the network input (Network::kInput) included.
  bool node_static(int node) const { return node == Network::kInput ? direct : bool(is_static[size_t(node)]); }
  bool node_events(int node) const { return node != Network::kInput && events[size_t(node)]; }
  // Per node: a dynamic weight layer whose first input is an event stream. Its synaptic operations
  // follow that input's non-zero count at each step, which the backend reports to the accountant.
  std::vector<char> counts_events;
};

SimulationPlan make_simulation_plan(const Network& net, const SimulationOptions& opts, int64_t batch);

}  // namespace snn
