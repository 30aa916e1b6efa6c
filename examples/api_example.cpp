// The C++ API in one page: build a small spiking network by hand, save it, and measure it.
//
// The network is a nearest-class-mean classifier built from the training set — no training loop:
//   input [1,28,28] -> flatten -> linear (score_k = x·μ_k − ½|μ_k|², shifted so the best class scores
//   positive) -> IF neurons (threshold = the largest score seen) -> linear readout (identity)
// Usage: api_example [OUT.snn.h5] [T]   (defaults: hand_built.snn.h5, 16)
#include <cstdio>
#include <string>

#include "snn/cpu_backend.hpp"
#include "snn/dataset.hpp"
#include "snn/layers/all.hpp"
#include "snn/model_file.hpp"
#include "snn/network.hpp"
#include "snn/sweep.hpp"

int main(int argc, char** argv) try {
  const std::string out = argc > 1 ? argv[1] : "hand_built.snn.h5";
  const int64_t T = argc > 2 ? std::stoll(argv[2]) : 16;
  const snn::Dataset train = snn::load_dataset("fashion-mnist:train");
  const snn::Dataset test = snn::load_dataset("fashion-mnist:test");
  const int64_t K = train.num_classes, D = snn::numel_of(train.sample_shape());

  // Class means μ_k; nearest mean = argmax_k x·μ_k − ½|μ_k|².
  snn::Tensor w({K, D}, 0.0f), b({K}, 0.0f);
  std::vector<double> count(size_t(K), 0.0);
  for (int64_t n = 0; n < train.size(); ++n) {
    const float* x = train.images.data() + n * D;
    for (int64_t i = 0; i < D; ++i) w[train.labels[size_t(n)] * D + i] += x[i];
    count[size_t(train.labels[size_t(n)])] += 1;
  }
  for (int64_t k = 0; k < K; ++k) {
    double norm2 = 0;
    for (int64_t i = 0; i < D; ++i) {
      w[k * D + i] = float(w[k * D + i] / count[size_t(k)]);
      norm2 += double(w[k * D + i]) * w[k * D + i];
    }
    b[k] = float(-0.5 * norm2);
  }
  // Neurons only carry positive values: shift all scores (argmax unchanged) so the best one is positive.
  snn::CpuBackend cpu;
  {
    snn::Network scores(train.sample_shape());
    scores.add(std::make_unique<snn::Flatten>("flatten"));
    scores.add(std::make_unique<snn::Linear>("scores", w, b));
    const snn::Tensor s = cpu.forward_ann(scores, train.batch_images(0, 2000));
    float lowest_best = 0.0f;
    for (int64_t n = 0; n < s.dim(0); ++n) {
      float best = s[n * K];
      for (int64_t k = 1; k < K; ++k) best = std::max(best, s[n * K + k]);
      lowest_best = std::min(lowest_best, best);
    }
    for (int64_t k = 0; k < K; ++k) b[k] -= lowest_best;
  }

  snn::Network net(train.sample_shape());
  net.add(std::make_unique<snn::Flatten>("flatten"));
  net.add(std::make_unique<snn::Linear>("templates", w, b));
  // Threshold: the largest response on a sample of training images ("max" normalisation).
  std::vector<snn::Tensor> outs;
  snn::Network probe = net;
  probe.add(std::make_unique<snn::Linear>("probe", snn::Tensor({K, K}, 0.0f)));
  cpu.forward_ann(probe, train.batch_images(0, 2000), &outs);
  float theta = 1e-3f;
  for (float v : outs[1].values()) theta = std::max(theta, v);
  net.add(std::make_unique<snn::NeuronLayer>("if", K, std::vector<float>{theta}));
  snn::Tensor identity({K, K}, 0.0f);
  for (int64_t k = 0; k < K; ++k) identity[k * K + k] = 1.0f;
  net.add(std::make_unique<snn::Linear>("readout", identity));
  net.metadata()["source"] = "examples/api_example.cpp (class templates)";
  snn::save_network(net, out);

  snn::SweepOptions o;
  o.sim.timesteps = T;
  const snn::SweepResult r = snn::run_sweep(cpu, net, test, o);
  std::printf("wrote %s\nANN view accuracy %.2f %%\n", out.c_str(), r.ann_accuracy);
  for (int64_t t = 1; t <= T; t *= 2) std::printf("  T=%-3lld SNN accuracy %.2f %%\n", (long long)t, r.accuracy[size_t(t - 1)]);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "api_example: error: %s\n", e.what());
  return 1;
}
