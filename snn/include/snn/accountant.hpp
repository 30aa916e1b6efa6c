// The accountant: turns the per-step counts a backend reports (spikes of each neuron layer, non-zero
// inputs of each weight layer) into the metrics of a BatchSimulation: spikes per layer per step,
// synaptic operations (accumulates on event inputs) and dense multiply-accumulates (analog inputs).
// Kept in the core so every backend reports identical metrics for identical spikes.
#pragma once
#include <cstdint>
#include <vector>

#include "snn/batch_simulation.hpp"
#include "snn/simulation_plan.hpp"

namespace snn {

class Accountant {
 public:
  explicit Accountant(const SimulationPlan& plan);

  // Neuron layer `node` emitted `count` non-zero spikes (whole batch) at absolute step t.
  void spikes(int node, int64_t t, double count);
  // Dynamic weight layer `node` ran at absolute step t. If the plan counts its input events, `nonzero`
  // of its first input's `total` elements (whole batch, that step) were non-zero and it is charged
  // ACs = macs·B·nonzero/total; otherwise (analog input) macs·B MACs and the counts are ignored.
  void weight_step(int node, int64_t t, double nonzero = 0, double total = 0);
  // A static weight layer ran once for all steps: its MACs are charged at the first step.
  void static_weight(int node);

  // Moves the counts into r (spikes, weight_nodes, synaptic_ops, dense_macs).
  void finish(BatchSimulation& r);

 private:
  const SimulationPlan& plan_;
  std::vector<std::vector<double>> spikes_, synaptic_ops_, dense_macs_;
};

}  // namespace snn
