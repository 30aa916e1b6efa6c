// snn::Backend: where networks run. Callers (sweeps, calibration, the CLI) talk to this interface only;
// the CPU backend lives in the core, the CUDA backend in cuda/ and is chosen at run time by make_backend.
//
// Both views take raw images [B, C, H, W] (as the dataset gives them); the backend applies the
// network's preprocessing and, in the SNN view, the input encoding.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "snn/layer.hpp"
#include "snn/network.hpp"
#include "snn/tensor.hpp"

namespace snn {

enum class Encoding {
  Direct,   // the analog image at every step (default)
  Poisson,  // each pixel fires with probability = its raw intensity in [0, 1], then is normalised
};
std::string to_string(Encoding e);
Encoding parse_encoding(const std::string& s);  // "direct" | "poisson"

struct SimulationOptions {
  int64_t timesteps = 32;
  Encoding encoding = Encoding::Direct;
  uint64_t seed = 0;                 // Poisson encoding: same seed, same spikes
  int64_t max_chunk_steps = 0;       // timesteps per chunk; 0 = as many as the memory budget allows
  int64_t memory_budget = int64_t(1) << 30;  // bytes of activations per chunk (the chunk bound)
};

// What one simulate() call of B images over T steps produces. Counts are totals over the batch.
struct BatchSimulation {
  int64_t timesteps = 0;
  int64_t batch = 0;
  // predictions[t * batch + b]: argmax of the readout summed over steps 1..t+1 (the anytime prediction).
  std::vector<int32_t> predictions;
  Tensor readout;  // [B, K]: readout summed over all T steps
  // Per neuron layer (Network::neuron_nodes order), per step: spikes emitted.
  std::vector<std::vector<double>> spikes;
  // Per weight layer (nodes with macs > 0, in order), per step: accumulates driven by events (spikes,
  // pooled spikes) and multiply-accumulates on analog inputs (the encoded image, membrane currents).
  std::vector<int> weight_nodes;
  std::vector<std::vector<double>> synaptic_ops;
  std::vector<std::vector<double>> dense_macs;
};

// Lets a calibration method look at (and adjust the network before) each neuron layer's chunk.
// The network passed to simulate() may be modified from here (e.g. its temporal biases); the backend
// reads a layer's parameters only after the hook for that layer has returned.
class SimulationHook {
 public:
  virtual ~SimulationHook() = default;
  // input: the neuron layer's input for the chunk, [steps * batch, ...] with sample index t*batch + b.
  virtual void before_neuron_layer(int /*node*/, const Tensor& /*input*/, const StepChunk& /*chunk*/) {}
  // output: the spikes the neuron layer emitted for the chunk, same layout.
  virtual void after_neuron_layer(int /*node*/, const Tensor& /*output*/, const StepChunk& /*chunk*/) {}
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // ANN view: class scores [B, K]. With node_outputs, also every node's output ([B, ...] each).
  virtual Tensor forward_ann(const Network& net, const Tensor& images, std::vector<Tensor>* node_outputs = nullptr) = 0;
  // SNN view over opts.timesteps steps. labels are not needed here: predictions are returned.
  virtual BatchSimulation simulate(const Network& net, const Tensor& images, const SimulationOptions& opts,
                                   SimulationHook* hook = nullptr) = 0;
};

// "cpu", "cuda", or "auto" (CUDA when built with it and a GPU is present, else CPU, saying so on stderr
// unless quiet). threads <= 0: all hardware threads.
std::unique_ptr<Backend> make_backend(const std::string& device, int threads = 0, bool quiet = false);

}  // namespace snn
