#include "snn/image_checks.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "snn/error.hpp"

namespace snn {

void check_finite_pixels(const float* values, int64_t count, int64_t per_image, const std::string& what) {
  const int64_t per = std::max<int64_t>(1, per_image);
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(values[i]))
      throw Error(what + ": image " + std::to_string(i / per) + " has " +
                  (std::isnan(values[i]) ? "a NaN" : "an infinite") + " pixel (element " + std::to_string(i % per) +
                  ")");
}

std::string pixel_range_warning(const float* values, int64_t count, const Preprocessing& model,
                                const std::string& what) {
  // Only a model whose normalisation is that of [0, 1] pixels says what range it expects.
  if (model.mean.empty() || count <= 0) return {};
  for (float m : model.mean)
    if (!(m >= 0.0f && m <= 1.0f)) return {};
  const auto [lo, hi] = std::minmax_element(values, values + count);
  std::ostringstream os;
  // 0..255 pixels reach far beyond 1; normalised ones (Fashion-MNIST: about -0.8 to 2.0) a little beyond
  // [0, 1] on both sides, or below it.
  if (*hi > 10.0f)
    os << what << ": float pixels reach " << *hi << " but the model's normalisation (mean " << model.mean[0]
       << ") is for pixels in [0, 1]: were 0..255 values given as float? (divide by 255, or pass uint8)";
  else if (*hi > 1.5f || *lo < -0.5f)
    os << what << ": float pixels span [" << *lo << ", " << *hi << "] but the model's normalisation (mean "
       << model.mean[0] << ") is for pixels in [0, 1]: were the images normalised already? (snnc applies the "
       << "model's mean and std itself)";
  return os.str();
}

}  // namespace snn
