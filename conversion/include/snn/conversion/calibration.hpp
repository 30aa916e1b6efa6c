// Calibration methods: post-conversion corrections of a converted SNN that need no gradients.
// Each method writes per-neuron-layer biases (NeuronLayer::set_bias) so that the SNN tracks the CNN at
// low T. Methods are registered by name, so sweeps can compare them in one run:
//   ftbc         Forward Temporal Bias Correction (Wu et al., ECCV 2024), b[t][c], variant "fixed"
//   ftbc-paper   FTBC as in the authors' described update (variant "paper"), see ftbc.hpp
//   ftbc-exact   FTBC with each step's bias solved (bisection) on all calibration images at once (no α)
//   ftbc-auto    per step range, the best of ftbc / ftbc-paper / ftbc-exact on held-out calibration
//                images (auto_calibration.hpp)
//   levels       signed QCFS networks: the CNN's L levels spread over T ≥ L steps, exact at t = T
//                (levels_calibration.hpp)
//   light        a per-channel bias constant over time matching the mean rate (Li et al., ICML 2021)
//   rts          the half-step input shift θ/2T with the membrane starting at 0 (Deng & Gu, ICLR 2021)
// New methods subclass Calibrator and call register_calibrator.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "snn/backend.hpp"
#include "snn/communicator.hpp"
#include "snn/dataset.hpp"
#include "snn/network.hpp"

namespace snn::conversion {

struct CalibrationOptions {
  int64_t timesteps = 32;    // T the SNN is calibrated for (every t ≤ T is served: methods are causal)
  double alpha = 0.5;        // step size of the bias update
  int64_t batches = 3;       // calibration batches
  int64_t batch_size = 128;  // images per batch
  int64_t iters = 1;         // passes over the batches
  uint64_t seed = 0;         // which images: a seeded shuffle of the calibration set
  std::string variant = "fixed";  // FTBC: "fixed" | "paper"
  int64_t max_chunk_steps = 0;    // engine chunking during calibration (0 = by memory); results must not depend on it
  // Data-parallel: each calibration batch is shared by these processes (shared_batch.hpp), with the
  // same biases as one process. Null: this process alone.
  Communicator* comm = nullptr;
  // Progress: (stage, done, total), e.g. ("batch 2/3: conv3.act", 5, 9).
  std::function<void(const std::string&, int64_t, int64_t)> progress;
};

struct CalibrationReport {
  std::string method;
  double seconds = 0.0;
  int64_t images = 0;  // distinct calibration images
  std::map<std::string, std::string> parameters;  // recorded in the model's provenance
};

class Calibrator {
 public:
  virtual ~Calibrator() = default;
  virtual std::string name() const = 0;
  virtual bool needs_data() const { return true; }
  // The calibration options that change what this method does, as `snnc calibrate` spells them
  // ("--data", "--alpha", "--batches", "--batch-size", "--iters", "--seed", "--variant"). Giving another
  // is an error (require_options_used): an option that silently does nothing misleads.
  virtual std::vector<std::string> options_used() const;
  // Refuses, before any work, a network or T the method cannot act on (e.g. levels at T < L).
  virtual void check_applicable(const Network&, const CalibrationOptions&) const {}
  // Calibrates net in place for opts.timesteps steps. Throws snn::Error on bad options or data.
  virtual CalibrationReport calibrate(Network& net, Backend& backend, const Dataset& data,
                                      const CalibrationOptions& opts) const = 0;
};

// Refuses an option the user gave that none of `methods` uses. given: the options set on the command
// line, by options_used()'s names, each with the spelling of this command ("--batch-size" is sweep's
// "--calib-batch-size"). "none" and "model" (sweep --compare's labels) use none.
void require_options_used(const std::vector<std::string>& methods, const std::map<std::string, std::string>& given);

using CalibratorFactory = std::function<std::unique_ptr<Calibrator>()>;
void register_calibrator(const std::string& name, CalibratorFactory factory);
std::unique_ptr<Calibrator> make_calibrator(const std::string& name);  // throws, listing the known names
std::vector<std::string> calibrator_names();

// Checks the options shared by all methods against the data (T ≥ 1, α > 0, enough images...).
void check_calibration_options(const CalibrationOptions& opts, const Dataset* data);
// The seeded shuffle of the dataset's indices that calibration images are taken from, in order.
std::vector<int64_t> calibration_order(const CalibrationOptions& opts, int64_t dataset_size);
// The calibration images: batches × batch_size distinct images, the first of calibration_order.
std::vector<std::vector<int64_t>> calibration_batches(const CalibrationOptions& opts, int64_t dataset_size);
Tensor gather_images(const Dataset& data, const std::vector<int64_t>& indices);
// The images (and labels) at `indices` as a dataset of their own; its source names `part`.
Dataset dataset_subset(const Dataset& data, const std::vector<int64_t>& indices, const std::string& part);
// Every calibration image, the batches of calibration_batches one after the other.
std::vector<int64_t> calibration_indices(const CalibrationOptions& opts, int64_t dataset_size);
// The indices of a process's share of a batch (data-parallel calibration).
std::vector<int64_t> share_of_batch(const std::vector<int64_t>& batch, const Share& share);
// The options every data-driven method records in its report: T, alpha, batches, batch_size, iters,
// seed, and the data's source.
std::map<std::string, std::string> calibration_parameters(const CalibrationOptions& opts, const Dataset& data);
// Records a report in the network's metadata (calibration, calibration.<param>).
void record_calibration(Network& net, const CalibrationReport& report);
// Copies the temporal biases a calibration left in the program into the network's neuron layers.
void store_biases(const Program& program, Network& net);
// Removes every neuron layer's bias, threshold scale and spike cap (the uncalibrated network).
void clear_calibration(Network& net);

}  // namespace snn::conversion
