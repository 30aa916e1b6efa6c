#include "snn/accountant.hpp"

namespace snn {

Accountant::Accountant(const SimulationPlan& plan)
    : plan_(plan),
      spikes_(plan.neuron_nodes.size(), std::vector<double>(size_t(plan.timesteps), 0.0)),
      synaptic_ops_(plan.weight_nodes.size(), std::vector<double>(size_t(plan.timesteps), 0.0)),
      dense_macs_(synaptic_ops_) {}

void Accountant::spikes(int node, int64_t t, double count) {
  spikes_[size_t(plan_.neuron_slot[size_t(node)])][size_t(t)] += count;
}

void Accountant::weight_step(int node, int64_t t, double nonzero, double total) {
  const size_t w = size_t(plan_.weight_slot[size_t(node)]);
  const double work = double(plan_.macs[size_t(node)]) * double(plan_.batch);
  if (plan_.counts_events[size_t(node)]) synaptic_ops_[w][size_t(t)] += total > 0 ? (nonzero / total) * double(plan_.macs[size_t(node)]) * double(plan_.batch) : 0.0;
  else dense_macs_[w][size_t(t)] += work;
}

void Accountant::static_weight(int node) {
  dense_macs_[size_t(plan_.weight_slot[size_t(node)])][0] += double(plan_.macs[size_t(node)]) * double(plan_.batch);
}

void Accountant::finish(BatchSimulation& r) {
  r.spikes = std::move(spikes_);
  r.weight_nodes = plan_.weight_nodes;
  r.synaptic_ops = std::move(synaptic_ops_);
  r.dense_macs = std::move(dense_macs_);
}

}  // namespace snn
