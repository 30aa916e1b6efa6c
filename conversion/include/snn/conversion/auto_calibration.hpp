// ftbc-auto: thresholds for T, then per step range the best of the FTBC variants, all chosen on
// held-out calibration images.
//
// Thresholds first (networks with ReLU layers, whose θ came from data at conversion): a percentile
// that suits T = 32 leaves a few coarse levels at T = 4 (ResNet example, held out: 80 % at T = 4 with
// percentile 99.99, 88 % with 99). The candidates are the network's own thresholds and those of least
// quantisation error for T (thresholds.hpp, "error", fitted on the fit images); ftbc-exact calibrates
// each and the better mean held-out accuracy (each octave of t weighted alike) keeps its thresholds.
// Clip/QCFS thresholds are part of the trained model and are kept.
//
// The variants trade places (fixed and paper lead at the first steps or at long runs, exact in between,
// depending on the network), so this method builds the bias range by range, [1], [2], [3, 4], [5, 8],
// ... [T/2+1, T]: for each range in order, each variant (ftbc, ftbc-paper, ftbc-exact) calibrates that
// range's steps on the calibration batches, the earlier steps keeping the rows already chosen (so every
// candidate corrects the state those rows really leave), and the candidate with the best mean accuracy
// over the range on the held-out images keeps its rows. Networks with signed neurons have two more
// candidates per range that fit nothing: "none" (no bias in the range) and "cancel" (rows that take
// back the earlier rows' sum by the range's last step): uncorrected signed neurons converge to the CNN,
// so late ranges may do best left alone. Causality makes this sound: rows of later steps
// cannot change the accuracy at earlier ones. Cost: about three calibrations for T plus a held-out sweep
// per range and candidate, plus two ftbc-exact calibrations when there are ReLU thresholds to choose.
//
// Last, for signed QCFS networks with T >= L (levels_calibration.hpp): "levels" (no bias) reproduces
// the CNN at t = T but not before; it replaces the range-by-range bias when it does better on the
// held-out images at t = T, the step the calibration is for. The report says which ("final_choice").
//
// The held-out images come from the calibration data, never from the evaluation set: they are the last
// `holdout` images of the seeded shuffle whose first batches × batch_size images the candidates fit on
// (so the two never overlap). The report records the choices and their held-out accuracies.
#pragma once
#include "snn/conversion/calibration.hpp"

namespace snn::conversion {

class AutoCalibrator : public Calibrator {
 public:
  std::string name() const override { return "ftbc-auto"; }
  CalibrationReport calibrate(Network& net, Backend& backend, const Dataset& data,
                              const CalibrationOptions& opts) const override;
};

// The held-out images of a calibration: the last `count` of the seeded shuffle that calibration_batches
// draws its batches from (disjoint from them when batches · batch_size + count <= the dataset's size).
std::vector<int64_t> held_out_indices(const CalibrationOptions& opts, int64_t dataset_size, int64_t count);

// The step ranges a choice is made for: [1, 1], [2, 2], [3, 4], [5, 8], ..., ending at T.
std::vector<std::pair<int64_t, int64_t>> doubling_ranges(int64_t timesteps);

}  // namespace snn::conversion
