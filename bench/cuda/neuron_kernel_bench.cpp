// CUDA kernel benchmark, as JSON on stdout (exit 77 without a GPU):
//  1. the fused neuron kernel's effective bandwidth — bytes of x read and s written per step, plus the
//     membrane read and written once per chunk — against the device's measured device-to-device copy
//     bandwidth (cudaMemcpy of a large buffer: bytes read + written per second), for IF and LIF at a
//     realistic shape (default 128 images × 64 channels × 56×56, T = 32). Goal: fraction ≥ 0.8.
//  2. llm.c style, every CUDA kernel against its CPU twin on the same layer and input: times (ms) and the
//     largest difference of the outputs (skip with --no-cpu).
//   neuron_kernel_bench [--batch 128] [--channels 64] [--size 56] [--steps 32] [--reps 10] [--no-cpu]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "snn/cpu/kernel.hpp"
#include "snn/cuda/check.hpp"
#include "snn/cuda/device.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/layers/all.hpp"

using namespace snn;

namespace {

void check(cudaError_t e, const char* what) { cuda::check_cuda(int(e), what, "neuron_kernel_bench"); }

// Milliseconds per call of f on the GPU (median of reps, after one warm-up), timed with CUDA events.
double gpu_ms(const std::function<void()>& f, int reps) {
  f();
  check(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(e0), "cudaEventRecord");
    f();
    check(cudaEventRecord(e1), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float m = 0;
    check(cudaEventElapsedTime(&m, e0, e1), "cudaEventElapsedTime");
    ms.push_back(m);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double cpu_ms(const std::function<void()>& f, int reps) {
  f();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

Tensor random_tensor(Shape s, std::mt19937& rng, float lo, float hi) {
  Tensor t(std::move(s));
  std::uniform_real_distribution<float> u(lo, hi);
  for (auto& v : t.values()) v = u(rng);
  return t;
}

// Device-to-device copy bandwidth: (read + written) bytes per second of one large cudaMemcpy.
double copy_gb_per_s(size_t bytes, int reps) {
  cuda::DeviceBuffer<unsigned char> a(bytes), b(bytes);
  check(cudaMemset(a.data(), 1, bytes), "cudaMemset");
  const double ms =
      gpu_ms([&] { check(cudaMemcpy(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy"); }, reps);
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

nlohmann::json neuron_bandwidth(NeuronModel model, int64_t B, int64_t C, int64_t S, int64_t T, int reps, double copy) {
  NeuronConfig cfg;
  cfg.model = model;
  cfg.beta = 0.9f;
  NeuronLayer layer("bench", C, {1.0f}, SourceActivation::ReLU, 0, cfg);
  layer.set_bias(Tensor({T, C}, 0.01f));
  cuda::Context ctx;
  auto k = cuda::make_kernel(layer, {{C, S, S}}, ctx);
  const int64_t per_step = B * C * S * S;
  // x: one random step uploaded, copied to the others (host generation of T steps would dominate).
  std::mt19937 rng(1);
  const Tensor step = random_tensor({B, C, S, S}, rng, 0.0f, 0.5f);
  cuda::DeviceTensor x({T * B, C, S, S}), s;
  cuda::copy_to_device(x.data(), step.data(), size_t(per_step) * sizeof(float));
  for (int64_t t = 1; t < T; ++t)
    cuda::copy_on_device(x.data() + t * per_step, x.data(), size_t(per_step) * sizeof(float));
  auto state = k->make_state(B);
  const StepChunk chunk{0, T, B};
  const double ms = gpu_ms([&] { k->forward_snn({&x}, s, state.get(), chunk); }, reps);
  const double bytes = double(per_step) * sizeof(float) * (2.0 * double(T) + 2.0);
  const double gbs = bytes / (ms * 1e-3) / 1e9;
  return {{"neuron", to_string(model)},     {"ms", ms},   {"bytes", bytes}, {"gb_per_s", gbs},
          {"fraction_of_peak", gbs / copy}, {"goal", 0.8}};
}

// One layer's kernels on both backends, SNN view on a chunk (stateless kernels: a batch of steps·B).
nlohmann::json twin(const Layer& layer, const std::vector<Shape>& shapes, const std::vector<Tensor>& inputs,
                    const StepChunk& chunk, int reps) {
  cuda::Context ctx;
  auto ck = cpu::make_kernel(layer, shapes);
  auto gk = cuda::make_kernel(layer, shapes, ctx);
  std::vector<const Tensor*> ci;
  std::vector<cuda::DeviceTensor> dev;
  for (const auto& t : inputs) {
    ci.push_back(&t);
    dev.push_back(cuda::DeviceTensor::from_host(t));
  }
  std::vector<const cuda::DeviceTensor*> gi;
  for (const auto& d : dev) gi.push_back(&d);
  // Fresh state per call: every timed call does the same work from the same start.
  Tensor co;
  cuda::DeviceTensor go;
  const double c = cpu_ms(
      [&] {
        auto st = ck->make_state(chunk.batch);
        ck->forward_snn(ci, co, st.get(), chunk);
      },
      std::max(1, reps / 5));
  auto gst = gk->make_state(chunk.batch);
  const double g = gpu_ms([&] { gk->forward_snn(gi, go, gst.get(), chunk); }, reps);
  // One more run of each from fresh states for the comparison.
  auto cst = ck->make_state(chunk.batch);
  ck->forward_snn(ci, co, cst.get(), chunk);
  gst = gk->make_state(chunk.batch);
  gk->forward_snn(gi, go, gst.get(), chunk);
  const Tensor gh = go.to_host();
  double diff = 0;
  for (int64_t i = 0; i < co.numel(); ++i) diff = std::max(diff, double(std::abs(co[i] - gh[i])));
  return {{"kernel", layer.type()}, {"layer", layer.name()}, {"cpu_ms", c},
          {"cuda_ms", g},           {"speedup", c / g},      {"max_abs_diff", diff}};
}

nlohmann::json kernel_table(int reps) {
  std::mt19937 rng(2);
  nlohmann::json rows = nlohmann::json::array();
  const int64_t T = 8, B = 32, n = T * B;
  const StepChunk chunk{0, T, B};
  {
    Conv2d l("conv3x3_64", {64, 64, 3, 3, 1, 1, 1, 1, 1}, random_tensor({64, 64, 3, 3}, rng, -0.05f, 0.05f),
             random_tensor({64}, rng, -0.1f, 0.1f));
    rows.push_back(twin(l, {{64, 32, 32}}, {random_tensor({n, 64, 32, 32}, rng, 0, 1)}, chunk, reps));
  }
  {
    Linear l("fc_4096_1000", random_tensor({1000, 4096}, rng, -0.02f, 0.02f), random_tensor({1000}, rng, -0.1f, 0.1f));
    rows.push_back(twin(l, {{4096}}, {random_tensor({n, 4096}, rng, 0, 1)}, chunk, reps));
  }
  {
    AvgPool2d l("avgpool2", {2, 2, 2, 2, 0, 0});
    rows.push_back(twin(l, {{64, 32, 32}}, {random_tensor({n, 64, 32, 32}, rng, 0, 1)}, chunk, reps));
  }
  {
    MaxPool2d l("maxpool2_spiking", {2, 2, 2, 2, 0, 0});
    Tensor x({n, 64, 32, 32});
    std::bernoulli_distribution fire(0.2);
    for (auto& v : x.values()) v = fire(rng) ? 1.0f : 0.0f;
    rows.push_back(twin(l, {{64, 32, 32}}, {x}, chunk, reps));
  }
  {
    Add l("add");
    rows.push_back(twin(l, {{64, 32, 32}, {64, 32, 32}},
                        {random_tensor({n, 64, 32, 32}, rng, 0, 1), random_tensor({n, 64, 32, 32}, rng, 0, 1)}, chunk,
                        reps));
  }
  {
    NeuronLayer l("neuron_if", 64, {1.0f});
    rows.push_back(twin(l, {{64, 32, 32}}, {random_tensor({n, 64, 32, 32}, rng, 0, 0.6f)}, chunk, reps));
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) try {
  int64_t B = 128, C = 64, S = 56, T = 32;
  int reps = 10;
  bool with_cpu = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> int64_t {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return std::stoll(argv[++i]);
    };
    if (a == "--batch")
      B = next();
    else if (a == "--channels")
      C = next();
    else if (a == "--size")
      S = next();
    else if (a == "--steps")
      T = next();
    else if (a == "--reps")
      reps = int(next());
    else if (a == "--no-cpu")
      with_cpu = false;
    else
      throw std::runtime_error("unknown argument " + a);
  }
  std::string why;
  if (!cuda::device_available(&why)) {
    std::fprintf(stderr, "neuron_kernel_bench: no GPU (%s)\n", why.c_str());
    return 77;
  }
  const double copy = copy_gb_per_s(size_t(1) << 30, reps);
  nlohmann::json out;
  out["device"] = cuda::device_name();
  out["peak_gb_per_s"] = copy;
  out["peak"] = "measured cudaMemcpy device-to-device of 1 GiB: (read + written) bytes per second";
  out["neurons"] = B * C * S * S;
  out["timesteps"] = T;
  out["shape"] = {B, C, S, S};
  out["bytes_counted"] = "x read and s written at every step, v read and written once per chunk";
  out["results"] = nlohmann::json::array();
  for (NeuronModel m : {NeuronModel::IF, NeuronModel::LIF})
    out["results"].push_back(neuron_bandwidth(m, B, C, S, T, reps, copy));
  if (with_cpu) out["kernels"] = kernel_table(reps);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "neuron_kernel_bench: %s\n", e.what());
  return 1;
}
