#include "snn/cpu/event_path.hpp"

#include <algorithm>

#include "snn/cpu/transpose.hpp"

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
  // Break-even densities measured with bench/kernel_paths (bench/README.md, fifth and seventh rounds):
  // the event path pays for listing the events (a pass over the input), which a kernel of several taps
  // per event recovers easily: on the Zen 5 VM events won on 3×3 kernels up to density 0.6 (ResNet-18's
  // 256 channels) to beyond 1.0 (the examples VGG's), by 1.5-2.7× at 0.45; on the Intel VM of the first
  // rounds only up to 0.3. 0.5 is taken (it was 0.3: the examples VGG's 32→64 convolution after average
  // pooling, at density 0.43, then ran dense at a third of the event path's speed). 1×1 kernels, strided
  // or not, won up to 0.4 on the Zen 5 VM (0.25 taken; the Intel VM's dense path was faster on strided
  // ones, by ~1.4×). A linear layer's dense GEMM is the
  // most efficient dense kernel, but it runs groups of kLinearGroupSamples samples, zero-padded: on
  // fewer samples its work is the padded group's, and the break-even rises with the padding.
  const bool is_linear = g.kernel_h * g.kernel_w == 1 && g.height * g.width == 1;
  const double taps_per_event = double(g.kernel_h * g.kernel_w) / double(g.stride_h * g.stride_w);
  double break_even = taps_per_event >= 2.0 ? 0.5 : 0.25;
  if (is_linear) {
    const int64_t samples = std::max<int64_t>(1, n / std::max<int64_t>(1, g.input_size()));
    const int64_t padded = (samples + kLinearGroupSamples - 1) / kLinearGroupSamples * kLinearGroupSamples;
    break_even = 0.3 * double(padded) / double(samples);
  }
  return {density < break_even ? kEventsPath : kDensePath, density};
}

void EventWeightKernel::forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState*,
                                    const StepChunk&) {
  const Tensor& x = *inputs[0];
  const double hint = take_density_hint();
  choice_ = {kDensePath, -1.0};
  if (has_events_ && x.numel() == x.dim(0) * geometry_.input_size()) {
    choice_ = choose_path(policy_, geometry_, x.data(), x.numel(), hint);
    if (choice_.path == kEventsPath) {
      run_events(x, out);
      return;
    }
  }
  if (!inputs_channels_last() && !output_channels_last()) {
    forward(inputs, out);
    return;
  }
  // The dense path reads and writes NCHW: a channels-last input or output is converted around it.
  const ConvGeometry& g = geometry_;
  const int64_t n = x.dim(0);
  const Tensor* in = &x;
  if (inputs_channels_last()) {
    dense_input_.resize(x.shape());
    to_channels_first(x.data(), n, g.in_channels, g.height * g.width, dense_input_.data());
    in = &dense_input_;
  }
  if (!output_channels_last()) {
    forward({in}, out);
    return;
  }
  forward({in}, dense_output_);
  out.resize(dense_output_.shape());
  to_channels_last(dense_output_.data(), n, g.out_channels, g.out_h * g.out_w, out.data());
}

double nonzero_fraction(const float* x, int64_t n) {
  if (n <= 0) return 0.0;
  int64_t c = 0;
#pragma omp parallel for reduction(+ : c) schedule(static)
  for (int64_t i = 0; i < n; ++i) c += x[i] != 0.0f;
  return double(c) / double(n);
}

}  // namespace snn::cpu
