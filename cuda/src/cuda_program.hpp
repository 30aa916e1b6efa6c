// The CUDA backend's Program: one kernel per node (weights on the device), the program's temporal
// biases (in the neuron kernels), and the device buffers the engine reuses across calls and chunks
// (private to the backend).
#pragma once
#include <memory>
#include <vector>

#include "snn/backend.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/cuda/neuron_kernel.hpp"

namespace snn::cuda {

class CudaProgram : public Program {
 public:
  CudaProgram(const Network& net, std::shared_ptr<Context> context);

  SpikingKernel& spiking(int node) const;  // throws naming the layer when it is not a spiking kernel
  Tensor neuron_bias(int node, bool* constant) const override;
  void set_neuron_bias(int node, const Tensor& bias, bool constant) override;

  std::shared_ptr<Context> context;
  std::vector<std::unique_ptr<Kernel>> kernels;

  // Device buffers, grown as needed and kept for the next call.
  DeviceTensor images;                      // the raw images of the current call
  DeviceTensor input;                       // the preprocessed images (direct encoding, ANN view)
  DeviceTensor encoded;                     // a chunk of Poisson-encoded input
  DeviceBuffer<float> mean, std;            // preprocessing, [C] each (empty: none)
  std::vector<DeviceTensor> ann_out;        // per node: ANN-view outputs (also the probes' reference)
  std::vector<DeviceTensor> static_out;     // per node: outputs of static nodes (computed once per run)
  std::vector<DeviceTensor> outs;           // per node: outputs of dynamic nodes for the current chunk
  std::vector<DeviceTensor> repeated;       // per node, plus slot N for the input: static outputs × steps
  DeviceBuffer<unsigned long long> counts;  // per counted node and step: non-zero elements
  DeviceTensor readout;                     // [B, K] running sums
  DeviceBuffer<int32_t> predictions;        // [T, B]
};

// Checks images against the network input (as the core's preprocess does), uploads them (prog.images),
// and returns the input the first layer reads in the ANN view and under direct encoding: the
// preprocessed images (prog.input, or prog.images when the network has no preprocessing).
const DeviceTensor& upload_input(CudaProgram& prog, const Tensor& images, bool preprocessed = true);

}  // namespace snn::cuda
