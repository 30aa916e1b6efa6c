// Entry point of the CUDA tests: skip (exit 77, which ctest reports as skipped) when no GPU is usable.
// SNN_CUDA_SYNC=1 (unless set otherwise) makes every launch synchronise, so a device-side error names the
// kernel and layer that caused it.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

#include "snn/cuda/device.hpp"

int main(int argc, char** argv) {
  std::string why;
  if (!snn::cuda::device_available(&why)) {
    std::printf("cuda_tests: skipped, no usable GPU (%s)\n", why.c_str());
    return 77;
  }
  setenv("SNN_CUDA_SYNC", "1", 0);
  std::printf("cuda_tests: running on %s\n", snn::cuda::device_name().c_str());
  return Catch::Session().run(argc, argv);
}
