// The example models on both backends (run where the lent GPU machine carries them): with
// SNN_GPU_MODELS_DIR holding vgg_qcfs.snn.h5 and resnet_relu.snn.h5, a sweep to T = 32 over the first
// 1000 Fashion-MNIST test images gives the same accuracy at every t (within 0.1 pt: one image), and
// FTBC (3 batches × 128 test images from index 1000 on, T = 8) the same biases (within 1e-4). Skipped,
// with a warning, when the variable is unset. (The dataset folder follows SNNC_FASHION_MNIST_DIR.)
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "snn/conversion/ftbc.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/cuda/cuda_backend.hpp"
#include "snn/dataset.hpp"
#include "snn/model_file.hpp"
#include "snn/sweep.hpp"

using namespace snn;

namespace {

Dataset slice(const Dataset& d, int64_t begin, int64_t count) {
  Dataset s;
  s.images = d.batch_images(begin, count);
  s.labels = d.batch_labels(begin, count);
  s.num_classes = d.num_classes;
  s.source = d.source + "[" + std::to_string(begin) + ":" + std::to_string(begin + count) + "]";
  return s;
}

void compare_model(const std::string& path, const Dataset& test, const Dataset& calib) {
  INFO(path);
  const Network net = load_network(path);
  CpuBackend cpu(0);
  cuda::CudaBackend gpu;

  SweepOptions so;
  so.sim.timesteps = 32;
  so.batch_size = 128;
  const SweepResult c = run_sweep(cpu, net, test, so), g = run_sweep(gpu, net, test, so);
  REQUIRE(g.accuracy.size() == c.accuracy.size());
  double worst = 0;
  for (size_t t = 0; t < c.accuracy.size(); ++t) worst = std::max(worst, std::abs(c.accuracy[t] - g.accuracy[t]));
  WARN(path << ": accuracy at T=32 cpu " << c.accuracy.back() << " %, cuda " << g.accuracy.back()
            << " %, largest per-t difference " << worst << " pt; sweep " << c.seconds << " s vs " << g.seconds << " s");
  REQUIRE(worst <= 0.1 + 1e-9);
  REQUIRE(std::abs(c.ann_accuracy - g.ann_accuracy) <= 0.1 + 1e-9);

  conversion::CalibrationOptions o;
  o.timesteps = 8;
  o.batches = 3;
  o.batch_size = 128;
  Network on_cpu = net, on_gpu = net;
  conversion::FtbcCalibrator ftbc;
  ftbc.calibrate(on_cpu, cpu, calib, o);
  ftbc.calibrate(on_gpu, gpu, calib, o);
  for (int i : net.neuron_nodes()) {
    const Tensor& cb = on_cpu.neuron(i).bias();
    const Tensor& gb = on_gpu.neuron(i).bias();
    REQUIRE(cb.shape() == gb.shape());
    const float d = max_abs_diff(cb, gb);
    INFO("layer " << net.layer(i).name() << ": largest bias difference " << d);
    CHECK(d <= 1e-4f);
  }
}

}  // namespace

TEST_CASE("example models: the CUDA backend matches the CPU backend", "[models]") {
  const char* dir = std::getenv("SNN_GPU_MODELS_DIR");
  if (!dir || !*dir) {
    WARN("SNN_GPU_MODELS_DIR is not set: the example-model comparison is skipped");
    return;
  }
  const Dataset all = load_dataset("fashion-mnist:test", 1000 + 3 * 128);
  REQUIRE(all.size() == 1000 + 3 * 128);
  const Dataset test = slice(all, 0, 1000), calib = slice(all, 1000, 3 * 128);
  for (const char* name : {"vgg_qcfs.snn.h5", "resnet_relu.snn.h5"}) {
    const std::string path = std::string(dir) + "/" + name;
    if (!std::ifstream(path).good()) {
      FAIL_CHECK("SNN_GPU_MODELS_DIR is set but " << path << " is missing");
      continue;
    }
    compare_model(path, test, calib);
  }
}
