// The CPU backend. SNN view: layer by layer over a chunk of timesteps — weight layers run once on the
// whole [T_chunk·B] batch (one large GEMM), neuron layers run their recurrence over t with the membrane
// in cache. Nodes that depend only on a direct-encoded input are "static": computed once for all steps.
// Chunking bounds memory; layer state (membranes, pooling sums) carries across chunks. OpenMP threads.
#pragma once
#include "snn/backend.hpp"

namespace snn {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int threads = 0);
  std::string name() const override { return "cpu"; }
  int threads() const { return threads_; }
  Tensor forward_ann(const Network& net, const Tensor& images, std::vector<Tensor>* node_outputs = nullptr) override;
  BatchSimulation simulate(const Network& net, const Tensor& images, const SimulationOptions& opts,
                           SimulationHook* hook = nullptr) override;

 private:
  int threads_;
};

}  // namespace snn
