// Calibration probes on both backends: every NeuronLayerAccess method gives the same numbers on the
// CUDA backend as on the CPU backend (exactly, on exact networks), and FTBC (both variants) calibrates
// the same biases through either backend.
#include <catch2/catch.hpp>

#include "cuda_test_util.hpp"
#include "snn/conversion/ftbc.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/cuda/cuda_backend.hpp"

using namespace snn;

namespace {

// Calls every access method and records what it sees; moves the bias a little before each chunk.
class RecordingProbe : public NeuronProbe {
 public:
  bool wants_ann_reference() const override { return true; }
  bool observes(int node) const override { return node != skip; }
  void before_layer(NeuronLayerAccess& a) override {
    const int64_t C = a.channels();
    const auto& am = a.ann_channel_means();
    log.insert(log.end(), am.begin(), am.end());
    Tensor b = a.bias();
    if (b.empty()) b = Tensor({a.chunk().t0 + a.chunk().steps, C}, 0.0f);
    std::vector<float> row(static_cast<size_t>(C));
    for (int64_t t = 0; t < a.chunk().steps; ++t) {
      for (int64_t c = 0; c < C; ++c) row[size_t(c)] = 0.0625f * float((c + t) % 3) - 0.0625f;
      auto s = a.replay_step(t, row, false);
      log.insert(log.end(), s.begin(), s.end());
      s = a.replay_step(t, row, true, t % 2 ? 0.25f : 0.0f);
      log.insert(log.end(), s.begin(), s.end());
    }
    if (b.dim(0) >= a.chunk().t0 + a.chunk().steps) {
      for (int64_t c = 0; c < C; ++c) b[a.chunk().t0 * C + c] += 0.125f;
      a.set_bias(b);
    }
    log.push_back(double(a.bias().numel()));
  }
  void after_layer(NeuronLayerAccess& a) override {
    const auto& m = a.output_channel_means();
    log.insert(log.end(), m.begin(), m.end());
    REQUIRE_THROWS(a.set_bias(Tensor()));  // only before the layer runs
  }
  int skip = -1;
  std::vector<double> log;
};

void require_close(const std::vector<double>& c, const std::vector<double>& g, double tol) {
  REQUIRE(c.size() == g.size());
  for (size_t i = 0; i < c.size(); ++i) {
    INFO("entry " << i);
    REQUIRE(std::abs(c[i] - g[i]) <= tol * std::max(1.0, std::abs(c[i])));
  }
}

Dataset random_dataset(const Network& net, int64_t n, std::mt19937& rng, bool exact) {
  Dataset d;
  Shape s = {n};
  s.insert(s.end(), net.input_shape().begin(), net.input_shape().end());
  d.images = exact ? cuda_test::dyadic_tensor(s, rng, 0.0f, 1.0f, 64) : snn_test::random_tensor(s, rng, 0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(int32_t(i % 10));
  d.num_classes = 10;
  d.source = "random";
  return d;
}

}  // namespace

TEST_CASE("cuda probe access matches the CPU's", "[probe]") {
  std::mt19937 rng(41);
  CpuBackend cpu(0);
  cuda::CudaBackend gpu;
  for (bool maxpool : {false, true}) {
    Network net = snn_test::small_cnn(rng, SourceActivation::QCFS, 4, maxpool, /*residual=*/true);
    cuda_test::make_exact(net);
    const Tensor images = cuda_test::exact_images(5, net.input_shape(), rng);
    for (int64_t chunk : {0, 3}) {
      INFO("maxpool " << maxpool << ", chunk " << chunk);
      SimulationOptions o;
      o.timesteps = 7;
      o.max_chunk_steps = chunk;
      RecordingProbe cprobe, gprobe;
      cprobe.skip = gprobe.skip = net.neuron_nodes()[1];
      auto cp = cpu.prepare(net);
      auto gp = gpu.prepare(net);
      const BatchSimulation c = cpu.simulate(*cp, images, o, &cprobe);
      const BatchSimulation g = gpu.simulate(*gp, images, o, &gprobe);
      require_close(cprobe.log, gprobe.log, 1e-12);  // ANN means: the same exact values, summed in double
      REQUIRE(g.predictions == c.predictions);
      REQUIRE(g.spikes == c.spikes);
      for (int i : net.neuron_nodes()) REQUIRE(gp->neuron_bias(i).values() == cp->neuron_bias(i).values());
    }
  }
}

TEST_CASE("FTBC calibrates the same biases on the CUDA backend", "[probe][ftbc]") {
  std::mt19937 rng(42);
  CpuBackend cpu(0);
  cuda::CudaBackend gpu;
  for (bool exact : {true, false})
    for (const char* variant : {"fixed", "paper", "exact"}) {
      // The exact variant's bisection turns a last-bit difference into a different branch: it is compared
      // where the two backends agree bit for bit (power-of-two networks).
      if (!exact && std::string(variant) == "exact") continue;
      INFO((exact ? "exact" : "random float") << " network, variant " << variant);
      Network net = snn_test::small_cnn(rng, SourceActivation::QCFS, 8, /*maxpool=*/true, /*residual=*/true);
      if (exact) cuda_test::make_exact(net);
      const Dataset data = random_dataset(net, 40, rng, exact);
      conversion::CalibrationOptions o;
      o.timesteps = 8;
      o.batches = 2;
      o.batch_size = 16;
      o.iters = 2;
      o.variant = variant;
      o.max_chunk_steps = 3;
      Network on_cpu = net, on_gpu = net;
      conversion::FtbcCalibrator ftbc;
      ftbc.calibrate(on_cpu, cpu, data, o);
      ftbc.calibrate(on_gpu, gpu, data, o);
      for (int i : net.neuron_nodes()) {
        INFO("layer " << net.layer(i).name());
        const Tensor& cb = on_cpu.neuron(i).bias();
        const Tensor& gb = on_gpu.neuron(i).bias();
        REQUIRE(cb.shape() == gb.shape());
        if (exact)
          REQUIRE(gb.values() == cb.values());
        else
          REQUIRE(max_abs_diff(cb, gb) <= 1e-4f);
      }
    }
}
