// snn::Backend: where networks run. Callers (sweeps, calibration, the CLI) talk to this interface only;
// the CPU backend lives in the core, the CUDA backend in cuda/ and is chosen at run time by make_backend.
//
// Layers describe, backends compute: a backend keeps a table of kernels per layer type (registered in
// each kernel's own file), and prepare() turns a Network into a Program: one kernel per node, weights
// uploaded once, reusable for any number of batches. The Program refers to the Network, which must
// outlive it and not change while it exists; the temporal biases of its neuron layers are the Program's
// own copy (calibration changes them through the probe or set_neuron_bias, then stores them back).
//
// Both views take raw images [B, C, H, W] (as the dataset gives them); the backend applies the
// network's preprocessing and, in the SNN view, the input encoding.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "snn/batch_simulation.hpp"
#include "snn/network.hpp"
#include "snn/probe.hpp"
#include "snn/simulation_options.hpp"
#include "snn/tensor.hpp"

namespace snn {

class Program {
 public:
  explicit Program(const Network& net) : net_(net) {}
  virtual ~Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  const Network& network() const { return net_; }

  // The temporal bias neuron layer `node` runs with ([T_b, C] or empty), and whether it is one row
  // constant over time. Initially the network's.
  virtual Tensor neuron_bias(int node, bool* constant = nullptr) const = 0;
  // Checked like NeuronLayer::set_bias; an empty tensor removes the bias.
  virtual void set_neuron_bias(int node, const Tensor& bias, bool constant_over_time = false) = 0;

 private:
  const Network& net_;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // One line for users: the backend and the device it runs on (e.g. "cuda: NVIDIA H200").
  virtual std::string description() const { return name(); }

  // Checks that every layer has a kernel here (the error names the layer and the backend), then builds them.
  virtual std::unique_ptr<Program> prepare(const Network& net) = 0;
  // ANN view: class scores [B, K]. With node_outputs, also every node's output ([B, ...] each, on the host).
  virtual Tensor forward_ann(Program& program, const Tensor& images, std::vector<Tensor>* node_outputs = nullptr) = 0;
  // SNN view over opts.timesteps steps. With a probe, calls it around the neuron layers it observes.
  virtual BatchSimulation simulate(Program& program, const Tensor& images, const SimulationOptions& opts,
                                   NeuronProbe* probe = nullptr) = 0;

  // One-off conveniences that prepare the network for this call only (prefer a Program for many batches).
  Tensor forward_ann(const Network& net, const Tensor& images, std::vector<Tensor>* node_outputs = nullptr);
  BatchSimulation simulate(const Network& net, const Tensor& images, const SimulationOptions& opts);
};

// "cpu", "cuda", or "auto" (CUDA when built with it and a GPU is present, else CPU, saying so on stderr
// unless quiet). threads <= 0: all hardware threads (CPU work of any backend). gpu: the GPU ordinal to use
// (modulo the GPUs present: one process per GPU passes its rank on the host), < 0 = the current device.
std::unique_ptr<Backend> make_backend(const std::string& device, int threads = 0, bool quiet = false, int gpu = -1);

}  // namespace snn
