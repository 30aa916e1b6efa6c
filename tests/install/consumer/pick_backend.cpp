// Uses snnc::cuda from an installed snnc: the CUDA backend registers itself; "auto" picks it when a GPU is
// usable and the CPU backend otherwise.
#include <cstdio>

#include "snn/backend.hpp"

int main() {
  const auto backend = snn::make_backend("auto", 1, /*quiet=*/true);
  std::printf("%s\n", backend->description().c_str());
  return 0;
}
