// "levels": a QCFS network with signed neurons reproduced at t = T, for any T ≥ L.
//
// A QCFS activation with L levels outputs θ/L · clamp(round(z·L/θ), 0, L). A signed neuron tracks
// n ≈ clamp(round(Σx/θ'), 0, cap) of its summed input at every step (neuron_core.hpp). With the SNN
// threshold θ' = θ·T/L and a cap of L net spikes, a neuron whose input sums to T·z over T steps ends with
// n = clamp(round(z·L/θ), 0, L) spikes of θ·T/L each: its mean output is the CNN's QCFS output, exactly,
// and by induction every layer's (up to float summation order, and to a neuron whose input jumps by
// more than θ' in one step, which one spike per step cannot follow at once). No data, no bias: the
// network equals its CNN at t = T (not before: the steps t < T carry a part of the levels). T < L
// cannot carry L levels; those layers keep θ and no cap (use ftbc-exact there).
//
// Calibrated for T, read at T: this is the one method here that does not serve every t ≤ T.
#pragma once
#include "snn/conversion/calibration.hpp"

namespace snn::conversion {

class LevelsCalibrator : public Calibrator {
 public:
  std::string name() const override { return "levels"; }
  bool needs_data() const override { return false; }
  std::vector<std::string> options_used() const override { return {}; }
  void check_applicable(const Network& net, const CalibrationOptions& opts) const override;  // require_levels_fit
  CalibrationReport calibrate(Network& net, Backend& backend, const Dataset& data,
                              const CalibrationOptions& opts) const override;
};

// Sets every signed QCFS layer with L ≤ T to θ·T/L and a cap of L net spikes (no bias); returns how
// many layers it set. Throws, naming the layer, when the network has a binary QCFS layer.
int64_t spread_levels_over_steps(Network& net, int64_t timesteps);
// Refuses (snn::Error naming --T, the layer and its L) a network with a QCFS layer of more levels than T:
// "levels" would leave that layer as it is. LevelsCalibrator::calibrate calls it first; front ends may call
// it before other long work (sweep --compare).
void require_levels_fit(const Network& net, int64_t timesteps);
// Whether the spread reproduces every QCFS layer at t = T: there is one, and each is signed with L <= T.
bool levels_apply(const Network& net, int64_t timesteps);

}  // namespace snn::conversion
