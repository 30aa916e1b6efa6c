// The choice between the dense and the event-driven path of a weight kernel (conv, linear) in the SNN
// view, made per chunk from the measured density of its input.
#pragma once
#include <cstdint>

#include "snn/cpu/event_convolution.hpp"
#include "snn/cpu/kernel.hpp"

namespace snn::cpu {

inline constexpr const char* kDensePath = "dense";
inline constexpr const char* kEventsPath = "events";
// The dense linear kernel's GEMMs run groups of exactly this many samples, the last one zero-padded (a
// multiple of every GEMM panel width, so a sample's result does not depend on its batch).
inline constexpr int64_t kLinearGroupSamples = 64;

// Fraction of non-zero elements of x[0, n) (parallel, exact count).
double nonzero_fraction(const float* x, int64_t n);

// Whether a layer of this geometry can run event-driven (event lists index a sample with int32).
bool event_path_fits(const ConvGeometry& g);

// Auto: the event path when the input's non-zero fraction is below the measured break-even point
// for this geometry; Dense / Events: forced. Uses `known_density` when it is not negative, else
// measures the density of x[0, n) (unless the path is forced dense).
KernelChoice choose_path(EventPolicy policy, const ConvGeometry& g, const float* x, int64_t n,
                         double known_density = -1.0);

// A weight kernel with both paths: the SNN view takes the event path per choose_path, the dense
// forward() otherwise (and always in the ANN view). Subclasses call enable_events() when the layer fits.
class EventWeightKernel : public Kernel {
 public:
  void forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState*, const StepChunk&) final;
  void set_event_policy(EventPolicy p) override { policy_ = p; }
  KernelChoice last_choice() const override { return choice_; }
  // Subclasses that take channels-last data (supports_channels_last) get it on either path: the dense
  // one converts around its NCHW forward().

 protected:
  void enable_events(const ConvGeometry& g) { geometry_ = g, has_events_ = true; }
  // x: [n, geometry's input]; resizes and fills out (in the layouts of set_layouts).
  virtual void run_events(const Tensor& x, Tensor& out) = 0;

 private:
  ConvGeometry geometry_;
  bool has_events_ = false;
  Tensor dense_input_, dense_output_;  // the dense path's NCHW copies of channels-last data
  EventPolicy policy_ = EventPolicy::Auto;
  KernelChoice choice_;
};

}  // namespace snn::cpu
