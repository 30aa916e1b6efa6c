#include "snn/cpu/event_path.hpp"

namespace snn::cpu {

bool event_path_fits(const ConvGeometry& g) {
  const int64_t limit = int64_t(1) << 30;
  return g.in_channels > 0 && g.out_channels > 0 && g.input_size() < limit && g.output_size() < limit;
}

KernelChoice choose_path(EventPolicy policy, const ConvGeometry& g, const float* x, int64_t n,
                         double known_density) {
  if (policy == EventPolicy::Dense) return {kDensePath, known_density};
  const double density = known_density >= 0 ? known_density : nonzero_fraction(x, n);
  if (policy == EventPolicy::Events) return {kEventsPath, density};
  // Break-even densities measured with bench/kernel_paths (bench/README.md): the event path pays for
  // listing the events (a pass over the input) and transposing its result, which a layer recovers
  // only when each event feeds several taps; a linear layer's dense GEMM is the most efficient one.
  const bool is_linear = g.kernel_h * g.kernel_w == 1 && g.height * g.width == 1;
  const double taps_per_event = double(g.kernel_h * g.kernel_w) / double(g.stride_h * g.stride_w);
  const double break_even = is_linear ? 0.3 : taps_per_event >= 2.0 ? 0.3 : 0.0;
  return {density < break_even ? kEventsPath : kDensePath, density};
}

}  // namespace snn::cpu
