// The CUDA backend's kernel table. Entries are added by each kernel's own file (kernels/).
#include "snn/cuda/kernel.hpp"

namespace snn::cuda {

KernelRegistry<KernelFactory>& kernels() {
  static KernelRegistry<KernelFactory> table("cuda");
  return table;
}

std::unique_ptr<Kernel> make_kernel(const Layer& layer, const std::vector<Shape>& input_shapes, Context& context) {
  return kernels().find(layer)(layer, input_shapes, context);
}

std::string where(const Layer& layer) {
  return "layer '" + layer.name() + "' (" + layer.type() + ") on the cuda backend";
}

}  // namespace snn::cuda
