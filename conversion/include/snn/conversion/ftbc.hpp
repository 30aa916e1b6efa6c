// FTBC: Forward Temporal Bias Correction (Wu, Bojković, Gu, Suo, Zou, ECCV 2024).
//
// For every neuron layer l, step t and channel c a bias b_l[t][c] (subtracted from the membrane at step
// t) such that the mean spike output at t equals the mean ANN activation: E[s_l[t]] = E[a_l]. Found with
// forward passes only. Per calibration batch, one SNN simulation runs with a hook; when it reaches
// layer l (upstream layers already corrected in this pass), the hook replays l's neurons step by step:
//   variant "fixed": run step t with the current b[t]; b[t] += α·mean_{batch,H,W}(s[t] − a);
//                    then redo step t from the saved state with the corrected b[t], and carry that state.
//   variant "paper": the local simulation runs without the bias, the membrane is corrected per element
//                    by α·(s[t] − a) after each step, and b[t] += α·mean(s[t] − a) is accumulated per
//                    batch (the update as described for the authors' code).
//   variant "exact": b[t] is solved so that mean(s[t]) = mean(a) per channel (bisection on the replay:
//                    the mean output falls monotonically, in steps, as the bias grows), on all the
//                    calibration images as one batch (batches × batch_size); no step size to tune.
// The engine then runs l with the corrected biases, so downstream layers see corrected spikes.
// Causal: b[t] depends only on steps ≤ t, so a calibration for T serves every shorter run.
#pragma once
#include "snn/conversion/calibration.hpp"

namespace snn::conversion {

enum class FtbcVariant { Fixed, Paper, Exact };
FtbcVariant parse_ftbc_variant(const std::string& s);  // "fixed" | "paper"

class FtbcCalibrator : public Calibrator {
 public:
  explicit FtbcCalibrator(std::string name = "ftbc", std::string forced_variant = "")
      : name_(std::move(name)), forced_variant_(std::move(forced_variant)) {}
  std::string name() const override { return name_; }
  // --variant only where it is not forced; the exact variant takes no step size.
  std::vector<std::string> options_used() const override;
  CalibrationReport calibrate(Network& net, Backend& backend, const Dataset& data,
                              const CalibrationOptions& opts) const override;

 private:
  std::string name_;
  std::string forced_variant_;  // "ftbc-paper" forces the paper variant
};

// Calibrates rows [first_step, opts.timesteps) of every neuron layer's bias with `variant`; the rows
// before first_step stay as the network has them (per-step rows, at least first_step of them). The
// result is left in the network's layers (no report: FtbcCalibrator, AutoCalibrator make those).
void calibrate_ftbc_steps(Network& net, Backend& backend, const Dataset& data, const CalibrationOptions& opts,
                          FtbcVariant variant, int64_t first_step);

}  // namespace snn::conversion
