// "light" calibration (bias correction of Li, Deng, Dong, Gong, Gu, ICML 2021): one bias per channel,
// constant over time, such that each layer's mean firing rate over T steps equals the ANN's mean
// activation. Layers in order, each with its upstream layers already corrected; the error of every
// calibration batch is averaged, then applied in full (b += mean(rate − a)), as in the original.
#pragma once
#include "snn/conversion/calibration.hpp"

namespace snn::conversion {

class LightCalibrator : public Calibrator {
 public:
  std::string name() const override { return "light"; }
  std::vector<std::string> options_used() const override { return {"--data", "--batches", "--batch-size", "--iters", "--seed"}; }
  CalibrationReport calibrate(Network& net, Backend& backend, const Dataset& data,
                              const CalibrationOptions& opts) const override;
};

}  // namespace snn::conversion
