// Accuracy-vs-timesteps sweeps. Because simulation is causal, one run of T steps gives the accuracy at
// every t ≤ T (the prediction at t is the argmax of the readout summed over steps 1..t), so a sweep is
// one simulation over the dataset. Also gathers firing rates and synaptic operations per layer per
// step, and turns them into an energy estimate (45 nm figures, Horowitz 2014: 4.6 pJ per 32-bit float
// MAC, 0.9 pJ per AC).
#pragma once
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "snn/backend.hpp"
#include "snn/communicator.hpp"
#include "snn/dataset.hpp"
#include "snn/sweep_checkpoint.hpp"

namespace snn {

struct EnergyModel {
  double pj_per_mac = 4.6;
  double pj_per_ac = 0.9;
};

// Called after each batch with (images done, images total).
using ProgressFn = std::function<void(int64_t, int64_t)>;

// Data-parallel and resumable (snn/data_parallel.hpp): the images are cut into blocks of batch_size
// (block k = images k·batch_size ...), dealt to the processes of `comm`, and their numbers added in block
// order, so the result is the same bit for bit on any number of processes (each with the same backend
// settings). Rank 0 reports progress.
struct SweepOptions {
  SimulationOptions sim;
  int64_t batch_size = 128;
  bool with_ann = true;  // also measure the ANN view's accuracy on the same images
  ProgressFn progress;
  Communicator* comm = nullptr;             // null: this process alone
  SweepCheckpoint* checkpoint = nullptr;    // resume from / save to (null: none)
  std::string checkpoint_key = "sweep";     // this sweep's part of the checkpoint
};

struct SweepResult {
  std::string method = "none";  // label of the network variant (e.g. calibration method)
  int64_t images = 0;
  int64_t timesteps = 0;
  double ann_accuracy = std::numeric_limits<double>::quiet_NaN();  // percent
  std::vector<double> accuracy;  // percent, entry t-1 = accuracy using steps 1..t

  std::vector<std::string> neuron_layers;
  std::vector<int64_t> neurons;                  // per image, per neuron layer
  std::vector<std::vector<double>> firing_rate;  // [layer][t]: spikes per neuron at step t
  std::vector<std::string> weight_layers;
  std::vector<int64_t> layer_macs;                // ANN MACs per image, per weight layer
  std::vector<std::vector<double>> synaptic_ops;  // [layer][t]: ACs per image at step t
  std::vector<std::vector<double>> dense_macs;    // [layer][t]: MACs per image at step t
  int64_t ann_macs = 0;                           // per image

  double seconds = 0.0;      // SNN simulation wall time
  double calibration_seconds = 0.0;  // time spent calibrating this variant (0 if it came calibrated)
  double ann_seconds = 0.0;  // ANN-view evaluation wall time

  double mean_firing_rate(size_t layer) const;  // over all steps
  // Energy per image in µJ of the SNN run up to step t (1-based), and of the CNN.
  double snn_energy_uj(int64_t t, const EnergyModel& e = {}) const;
  double ann_energy_uj(const EnergyModel& e = {}) const;
};

// ANN-view accuracy in percent (data-parallel over comm like a sweep).
double evaluate_ann(Backend& backend, const Network& net, const Dataset& data, int64_t batch_size = 256,
                    const ProgressFn& progress = {}, Communicator* comm = nullptr);
SweepResult run_sweep(Backend& backend, const Network& net, const Dataset& data, const SweepOptions& opts);

// sweep.h5: one group per method under /methods, plus what produced it. Written atomically.
//   /          attrs: format = "snnc-sweep", format_version, snnc_version, command_line, timesteps,
//              images, ann_accuracy, pj_per_mac, pj_per_ac, plus `info` entries
//   /methods/NAME  accuracy [T], firing_rate [L, T], synaptic_ops [W, T], dense_macs [W, T],
//              energy_uj [T] (cumulative per image), neuron_layers, neurons, weight_layers, layer_macs;
//              attrs seconds, ann_accuracy, ann_energy_uj, ann_macs
void write_sweep_file(const std::string& path, const std::vector<SweepResult>& results,
                      const std::map<std::string, std::string>& info, const EnergyModel& energy = {});

}  // namespace snn
