// The choice between the dense and the event-driven path of a weight kernel (conv, linear) in the SNN
// view, made per chunk from the measured density of its input.
#pragma once
#include <cstdint>

#include "snn/cpu/event_convolution.hpp"
#include "snn/cpu/kernel.hpp"

namespace snn::cpu {

inline constexpr const char* kDensePath = "dense";
inline constexpr const char* kEventsPath = "events";

// Whether a layer of this geometry can run event-driven (event lists index a sample with int32).
bool event_path_fits(const ConvGeometry& g);

// Auto: the event path when the input's non-zero fraction is below the measured break-even point
// for this geometry; Dense / Events: forced. Uses `known_density` when it is not negative, else
// measures the density of x[0, n) (unless the path is forced dense).
KernelChoice choose_path(EventPolicy policy, const ConvGeometry& g, const float* x, int64_t n,
                         double known_density = -1.0);

}  // namespace snn::cpu
