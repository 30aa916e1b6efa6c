// The CPU backend's kernel table. Entries are added by each kernel's own file.
#include "snn/cpu/kernel.hpp"

namespace snn::cpu {

KernelRegistry<KernelFactory>& kernels() {
  static KernelRegistry<KernelFactory> table("cpu");
  return table;
}

std::unique_ptr<Kernel> make_kernel(const Layer& layer, const std::vector<Shape>& input_shapes) {
  return kernels().find(layer)(layer, input_shapes);
}

}  // namespace snn::cpu
