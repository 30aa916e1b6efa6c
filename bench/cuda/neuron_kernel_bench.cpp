// Fused neuron kernel throughput on the GPU, as JSON: effective memory bandwidth (x read, s written,
// v read+written once per chunk) against the device's peak, for IF and LIF, chunks of T steps.
//   neuron_kernel_bench [neurons_per_step=12845056] [T=32]
#include <cuda_runtime.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "snn/cuda/device.hpp"
#include "snn/cuda/neuron_kernels.hpp"

int main(int argc, char** argv) try {
  const int64_t n = argc > 1 ? std::stoll(argv[1]) : 128LL * 32 * 28 * 28;  // a VGG conv layer, batch 128
  const int64_t T = argc > 2 ? std::stoll(argv[2]) : 32;
  std::string why;
  if (!snn::cuda::device_available(&why)) {
    std::fprintf(stderr, "neuron_kernel_bench: no GPU (%s)\n", why.c_str());
    return 77;
  }
  const int64_t C = 32, inner = 28 * 28, B = n / (C * inner);
  std::vector<float> x(size_t(T * n), 0.3f), theta(size_t(C), 1.0f), bias(size_t(T * C), 0.01f);
  auto dx = snn::cuda::DeviceBuffer::from(x), dth = snn::cuda::DeviceBuffer::from(theta);
  auto db = snn::cuda::DeviceBuffer::from(bias);
  snn::cuda::DeviceBuffer ds(x.size()), dv(static_cast<size_t>(n));
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int mem_clock_khz = 0;
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
  const double peak_gbs = 2.0 * mem_clock_khz * 1e3 * (prop.memoryBusWidth / 8) / 1e9;
  nlohmann::json results = nlohmann::json::array();
  for (int lif = 0; lif < 2; ++lif) {
    snn::cuda::NeuronKernelArgs a;
    a.x = dx.data();
    a.s = ds.data();
    a.v = dv.data();
    a.theta = dth.data();
    a.bias = db.data();
    a.bias_steps = T;
    a.steps = T;
    a.batch = B;
    a.channels = C;
    a.inner = inner;
    a.config.model = lif ? snn::NeuronModel::LIF : snn::NeuronModel::IF;
    a.config.beta = 0.9f;
    snn::cuda::neuron_forward(a);  // warm-up
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const int reps = 20;
    cudaEventRecord(e0);
    for (int r = 0; r < reps; ++r) snn::cuda::neuron_forward(a);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    const double s = ms / 1e3 / reps;
    const double bytes = double(T) * double(n) * 8.0 + double(n) * 8.0;
    results.push_back({{"neuron", lif ? "lif" : "if"},
                       {"seconds", s},
                       {"gb_per_s", bytes / s / 1e9},
                       {"fraction_of_peak", bytes / s / 1e9 / peak_gbs},
                       {"neuron_steps_per_s", double(T) * double(n) / s}});
  }
  nlohmann::json j = {{"benchmark", "cuda_neuron_kernel"}, {"device", prop.name}, {"neurons", B * C * inner},
                      {"timesteps", T}, {"peak_gb_per_s", peak_gbs}, {"results", results}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "neuron_kernel_bench: error: %s\n", e.what());
  return 1;
}
