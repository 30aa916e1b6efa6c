// The CPU backend. SNN view: layer by layer over a chunk of timesteps — weight layers run once on the
// whole [T_chunk·B] batch (one large GEMM), neuron layers run their recurrence over t with the membrane
// in cache. The simulation plan (snn/simulation_plan.hpp) says which nodes are static (computed once for
// all steps) and how many steps a chunk holds; layer state (membranes, pooling sums) carries across
// chunks. Kernels: snn/cpu/*.hpp, one file per layer type. OpenMP threads.
#pragma once
#include "snn/backend.hpp"
#include "snn/event_policy.hpp"

namespace snn {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int threads = 0);
  std::string name() const override { return "cpu"; }
  std::string description() const override;
  int threads() const { return threads_; }
  // Event-driven weight kernels (snn/event_policy.hpp); applies to programs prepared afterwards.
  void set_event_policy(EventPolicy p) { events_ = p; }
  EventPolicy event_policy() const { return events_; }
  // Channels-last activations between event convolutions and neuron layers (snn/cpu/activation_layout.hpp;
  // on by default, SNNC_CPU_CHANNELS_LAST=on|off): the same numbers either way, bit for bit.
  void set_channels_last(bool on) { channels_last_ = on; }
  bool channels_last() const { return channels_last_; }

  std::unique_ptr<Program> prepare(const Network& net) override;
  Tensor forward_ann(Program& program, const Tensor& images, std::vector<Tensor>* node_outputs = nullptr) override;
  BatchSimulation simulate(Program& program, const Tensor& images, const SimulationOptions& opts,
                           NeuronProbe* probe = nullptr) override;
  using Backend::forward_ann;
  using Backend::simulate;

 private:
  // simulate() on one slice of the batch (all of it when a probe observes).
  BatchSimulation simulate_slice(Program& program, const Tensor& images, const SimulationOptions& opts,
                                 NeuronProbe* probe);
  int threads_;
  EventPolicy events_;
  bool channels_last_ = true;
};

}  // namespace snn
