// "rts": the half-step input shift of Deng & Gu (ICLR 2021, "Optimal conversion of conventional ANNs
// to SNNs"): the membrane starts at 0 and every step adds θ/2T, which centres the SNN's quantisation
// error around the ANN's value. Expressed as a temporal bias so that it composes with everything else:
// b[t][c] = −θ_c/2T, plus v_init·θ_c at t = 0 to cancel the configured initial membrane. Needs no data.
#pragma once
#include "snn/conversion/calibration.hpp"

namespace snn::conversion {

class RtsShiftCalibrator : public Calibrator {
 public:
  std::string name() const override { return "rts"; }
  bool needs_data() const override { return false; }
  std::vector<std::string> options_used() const override { return {}; }
  CalibrationReport calibrate(Network& net, Backend& backend, const Dataset& data,
                              const CalibrationOptions& opts) const override;
};

}  // namespace snn::conversion
