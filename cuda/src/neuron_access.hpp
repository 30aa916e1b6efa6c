// What a calibration probe sees of one neuron layer on one chunk, on the CUDA backend: the twin of the
// CPU backend's CpuNeuronAccess, with every statistic computed on the device (deterministic per-channel
// sums in double) and only per-channel numbers copied to the host.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "cuda_program.hpp"
#include "snn/probe.hpp"

namespace snn::cuda {

class CudaNeuronAccess : public NeuronLayerAccess {
 public:
  struct Shared {  // per simulation: the probe's own membranes and the ANN reference (on the device)
    std::map<int, std::unique_ptr<KernelState>> shadow;
    std::map<int, const DeviceTensor*> ann;  // the program's ANN-view outputs of observed layers
    std::map<int, std::vector<double>> ann_sums;  // per sample and channel
  };

  CudaNeuronAccess(CudaProgram& prog, Shared& shared, int node, const StepChunk& chunk, const DeviceTensor& input);

  int node() const override { return node_; }
  const StepChunk& chunk() const override { return chunk_; }
  int64_t channels() const override { return kernel_.channels(); }

  int64_t positions() const override { return input_.numel() / (chunk_.steps * chunk_.batch * channels()); }
  const std::vector<double>& ann_sample_sums() override;
  std::vector<double> replay_step_sums(int64_t t, const std::vector<float>& bias, bool commit, float nudge) override;

  Tensor bias() const override { return kernel_.bias(); }
  bool bias_constant() const override { return kernel_.bias_constant(); }
  void set_bias(const Tensor& bias, bool constant) override;

  void set_output(const DeviceTensor* out) { output_ = out; }
  const std::vector<double>& output_channel_sums() override;

 private:
  CudaProgram& prog_;
  Shared& shared_;
  int node_;
  StepChunk chunk_;
  const DeviceTensor& input_;
  SpikingKernel& kernel_;
  const DeviceTensor* output_ = nullptr;
  std::vector<double> out_sums_;
};

}  // namespace snn::cuda
