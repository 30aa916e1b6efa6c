// The CUDA backend: the SNN engine of snn/cpu_backend.cpp on the GPU, kernel for kernel. SNN view: layer
// by layer over a chunk of timesteps (snn::make_simulation_plan decides static nodes and chunk sizes);
// weight layers run once on the whole [T_chunk·B] batch (cuDNN convolution, cuBLAS GEMM), neuron layers
// run their recurrence over t in one fused kernel with the membrane in a register. Input encoding,
// spike counting and the anytime readout run on the device; only per-step counts (once per chunk) and
// the results come back to the host, and the shared snn::Accountant turns the counts into metrics.
// Probes see the same NeuronLayerAccess as on the CPU, computed on the device.
//
// Registered as "cuda" for snn::make_backend when this library is linked (it is linked whole).
#pragma once
#include <memory>

#include "snn/backend.hpp"
#include "snn/cuda/context.hpp"

namespace snn::cuda {

class CudaBackend : public Backend {
 public:
  // Throws when no GPU is usable. gpu >= 0: use GPU (gpu mod count), e.g. an MPI rank on its host.
  explicit CudaBackend(int gpu = -1);
  std::string name() const override { return "cuda"; }
  std::string description() const override;

  std::unique_ptr<Program> prepare(const Network& net) override;
  Tensor forward_ann(Program& program, const Tensor& images, std::vector<Tensor>* node_outputs = nullptr) override;
  BatchSimulation simulate(Program& program, const Tensor& images, const SimulationOptions& opts,
                           NeuronProbe* probe = nullptr) override;
  using Backend::forward_ann;
  using Backend::simulate;

 private:
  std::shared_ptr<Context> context_;  // shared with the programs, which may outlive this object
  std::string device_;
};

}  // namespace snn::cuda
