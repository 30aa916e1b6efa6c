// CPU kernels: the compute of one layer type on the CPU backend (OpenMP threads, Eigen GEMMs). A kernel
// is made per node by prepare() from the layer's description and its input shapes, and may keep
// derived data (e.g. transposed weights). Tensors hold [N, ...] samples; in the SNN view a chunk holds
// steps·batch samples with sample index t·batch + b.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "snn/event_policy.hpp"
#include "snn/kernel_registry.hpp"
#include "snn/layer.hpp"
#include "snn/simulation_options.hpp"
#include "snn/tensor.hpp"

namespace snn::cpu {

class PlaneStage;  // plane_stage.hpp

// Per-run state of a stateful kernel (membranes, running sums), carried across chunks.
class KernelState {
 public:
  virtual ~KernelState() = default;
};

// How a kernel ran its last SNN-view call, for profiles: path "dense" or "events" (empty for kernels
// with one path) and the input's non-zero fraction when it was measured (else negative).
struct KernelChoice {
  const char* path = "";
  double input_density = -1.0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // ANN view on a batch: inputs [N, ...] -> out [N, ...] (out is resized by the kernel).
  virtual void forward(const std::vector<const Tensor*>& inputs, Tensor& out) = 0;
  // SNN view. Stateless kernels need not override these: a chunk is then just a bigger batch.
  virtual std::unique_ptr<KernelState> make_state(int64_t /*batch*/) const { return nullptr; }
  // Puts a state made by make_state back to what make_state gave, in place (no allocation); false where
  // the kernel cannot, and the caller makes a new one.
  virtual bool reset_state(KernelState& /*state*/) const { return false; }
  virtual void forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState* /*state*/,
                           const StepChunk& /*chunk*/) {
    forward(inputs, out);
  }
  virtual void set_event_policy(EventPolicy) {}
  virtual KernelChoice last_choice() const { return {}; }
  // Whether forward_snn takes an input of one step ([batch, ...]) as the same input at every step of
  // the chunk. Then the backend passes a static producer's output as it is instead of copying it once
  // per step (for ResNet-18's stem, 16 copies of 26 MiB per batch of 8).
  virtual bool reads_static_inputs() const { return false; }
  // Non-zero outputs per step of the last forward_snn, where the kernel counted them as it wrote them
  // (a neuron's spikes); null where it did not, and the backend counts.
  virtual const std::vector<int64_t>* output_nonzeros() const { return nullptr; }
  // Where the SNN view is a per-(image, channel)-plane recurrence over a single input, that recurrence
  // (plane_stage.hpp), so that the neuron layer feeding it can run it on each plane as it steps it; null
  // otherwise.
  virtual const PlaneStage* plane_stage() const { return nullptr; }
  // The non-zero fraction of the next forward_snn call's first input, when the caller has counted it
  // (the backend counts spikes anyway); the kernel uses it once instead of measuring.
  void hint_input_density(double d) { density_hint_ = d; }
  // Channels-last activations (each sample [H, W, C] instead of [C, H, W]; tensors keep their logical
  // [N, C, H, W] shape) in the SNN view, for kernels that can read or write them: the backend runs
  // event convolution → neuron → event convolution chains in it, so that no kernel transposes between
  // its [position][channel] work and NCHW planes (activation_layout.hpp). A kernel that supports it
  // takes the layouts of the next forward_snn call's inputs and output from set_layouts; others only
  // ever see NCHW.
  virtual bool supports_channels_last() const { return false; }
  void set_layouts(bool inputs_channels_last, bool output_channels_last) {
    inputs_channels_last_ = inputs_channels_last;
    output_channels_last_ = output_channels_last;
  }

 protected:
  bool inputs_channels_last() const { return inputs_channels_last_; }
  bool output_channels_last() const { return output_channels_last_; }
  // The hint for this call, or negative when there is none; clears it.
  double take_density_hint() {
    const double d = density_hint_;
    density_hint_ = -1.0;
    return d;
  }

 private:
  double density_hint_ = -1.0;
  bool inputs_channels_last_ = false, output_channels_last_ = false;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const Layer& layer, const std::vector<Shape>& inputs)>;
KernelRegistry<KernelFactory>& kernels();

// The kernel for one layer (throws naming the layer when the CPU backend has none).
std::unique_ptr<Kernel> make_kernel(const Layer& layer, const std::vector<Shape>& input_shapes);

}  // namespace snn::cpu
