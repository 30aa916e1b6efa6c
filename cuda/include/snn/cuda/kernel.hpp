// CUDA kernels: the compute of one layer type on the CUDA backend, on device tensors. The twin of
// snn/cpu/kernel.hpp with the same contract (the CPU kernel is the reference): a kernel is made per node
// by prepare() from the layer's description and its input shapes, uploads its weights once, and may keep
// derived data (descriptors, chosen algorithms). Tensors hold [N, ...] samples; in the SNN view a chunk
// holds steps·batch samples with sample index t·batch + b.
//
// Each layer type registers its factory from its own file:
//   namespace { const bool registered = cuda::kernels().add("conv2d", make_conv2d_kernel); }
// (the library is linked whole, so no registration is dropped).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "snn/cuda/context.hpp"
#include "snn/cuda/device_tensor.hpp"
#include "snn/kernel_registry.hpp"
#include "snn/layer.hpp"
#include "snn/simulation_options.hpp"

namespace snn::cuda {

// Per-run state of a stateful kernel (membranes, running sums) in device memory, carried across chunks.
class KernelState {
 public:
  virtual ~KernelState() = default;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // ANN view on a batch: inputs [N, ...] -> out [N, ...] (out is resized, or made an alias, by the kernel).
  virtual void forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) = 0;
  // SNN view. Stateless kernels need not override these: a chunk is then just a bigger batch.
  virtual std::unique_ptr<KernelState> make_state(int64_t /*batch*/) const { return nullptr; }
  virtual void forward_snn(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out, KernelState* /*state*/,
                           const StepChunk& /*chunk*/) {
    forward(inputs, out);
  }
};

using KernelFactory =
    std::function<std::unique_ptr<Kernel>(const Layer& layer, const std::vector<Shape>& inputs, Context& context)>;
KernelRegistry<KernelFactory>& kernels();

// The kernel for one layer (throws naming the layer when the CUDA backend has none).
std::unique_ptr<Kernel> make_kernel(const Layer& layer, const std::vector<Shape>& input_shapes, Context& context);

// "layer 'NAME' (TYPE) on the cuda backend": the prefix of every error a kernel reports.
std::string where(const Layer& layer);

}  // namespace snn::cuda
