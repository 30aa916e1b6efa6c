// Uses snnc::conversion from an installed snnc: prints the registered calibration methods.
#include <cstdio>

#include "snn/conversion/calibration.hpp"

int main() {
  for (const auto& name : snn::conversion::calibrator_names()) std::printf("%s\n", name.c_str());
  return snn::conversion::calibrator_names().empty() ? 1 : 0;
}
