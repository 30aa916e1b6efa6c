// Helpers shared by the core tests: random tensors and small hand-built networks.
#pragma once
#include <random>
#include <string>

#include "snn/cpu/kernel.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/dataset.hpp"
#include "snn/layers/all.hpp"
#include "snn/network.hpp"

namespace snn_test {

inline snn::Tensor random_tensor(snn::Shape shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  snn::Tensor t(std::move(shape));
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = u(rng);
  return t;
}

// A layer run through the CPU backend's kernel (the reference every other backend is compared with),
// with its SNN state for `batch` images. Input shapes are per sample.
struct CpuRun {
  CpuRun(const snn::Layer& layer, const std::vector<snn::Shape>& inputs, int64_t batch = 1)
      : kernel(snn::cpu::make_kernel(layer, inputs)), state(kernel->make_state(batch)) {}
  void snn(const std::vector<const snn::Tensor*>& ins, snn::Tensor& out, const snn::StepChunk& chunk) {
    kernel->forward_snn(ins, out, state.get(), chunk);
  }
  std::unique_ptr<snn::cpu::Kernel> kernel;
  std::unique_ptr<snn::cpu::KernelState> state;
};

// The ANN view of one layer on a batch, through its CPU kernel.
inline void ann(const snn::Layer& layer, const std::vector<const snn::Tensor*>& ins, snn::Tensor& out) {
  std::vector<snn::Shape> shapes;
  for (const snn::Tensor* t : ins) shapes.emplace_back(t->shape().begin() + 1, t->shape().end());
  snn::cpu::make_kernel(layer, shapes)->forward(ins, out);
}

inline std::string temp_path(const std::string& name) {
  return std::string(SNN_BINARY_DIR) + "/test_tmp_" + name;
}

// conv(3x3) -> neuron -> avgpool -> conv(3x3, stride 2) -> neuron -> flatten -> linear(10), input 2x8x8.
// Weights are random; thresholds are 1 (ReLU) unless given.
inline snn::Network small_cnn(std::mt19937& rng, snn::SourceActivation act = snn::SourceActivation::ReLU,
                              int levels = 0, bool maxpool = false, bool residual = false) {
  using namespace snn;
  Network net({2, 8, 8});
  Conv2dSpec c1{2, 4, 3, 3, 1, 1, 1, 1, 1};
  net.add(std::make_unique<Conv2d>("conv1", c1, random_tensor({4, 2, 3, 3}, rng, -0.5f, 0.5f),
                                   random_tensor({4}, rng, 0.0f, 0.2f)));
  int n1 = net.add(std::make_unique<NeuronLayer>("act1", 4, std::vector<float>{1.0f}, act, levels));
  if (residual) {
    Conv2dSpec c{4, 4, 3, 3, 1, 1, 1, 1, 1};
    net.add(std::make_unique<Conv2d>("res.conv", c, random_tensor({4, 4, 3, 3}, rng, -0.3f, 0.3f)));
    int r = net.add(std::make_unique<NeuronLayer>("res.act", 4, std::vector<float>{1.0f}, act, levels));
    int a = net.add(std::make_unique<Add>("res.add"), {r, n1});
    net.add(std::make_unique<NeuronLayer>("res.out", 4, std::vector<float>{1.5f}, act, levels), {a});
  }
  if (maxpool) net.add(std::make_unique<MaxPool2d>("pool1", PoolSpec{2, 2, 2, 2, 0, 0}));
  else net.add(std::make_unique<AvgPool2d>("pool1", PoolSpec{2, 2, 2, 2, 0, 0}));
  Conv2dSpec c2{4, 6, 3, 3, 2, 2, 1, 1, 2};
  net.add(std::make_unique<Conv2d>("conv2", c2, random_tensor({6, 2, 3, 3}, rng, -0.5f, 0.5f),
                                   random_tensor({6}, rng, 0.0f, 0.2f)));
  net.add(std::make_unique<NeuronLayer>("act2", 6, std::vector<float>{1.0f, 0.8f, 1.2f, 1.0f, 0.9f, 1.1f}, act,
                                        levels));
  net.add(std::make_unique<Flatten>("flatten"));
  net.add(std::make_unique<Linear>("fc", random_tensor({10, 24}, rng, -0.5f, 0.5f), random_tensor({10}, rng)));
  return net;
}

// The images labelled by the network's own ANN view (argmax of its logits), so that SNN accuracy
// measures agreement with the CNN.
inline snn::Dataset ann_labelled(const snn::Network& net, const snn::Tensor& images) {
  snn::CpuBackend cpu(2);
  const snn::Tensor logits = cpu.forward_ann(net, images);
  snn::Dataset d;
  d.images = images;
  d.num_classes = int32_t(logits.dim(1));
  for (int64_t b = 0; b < logits.dim(0); ++b) {
    int32_t best = 0;
    for (int64_t k = 1; k < logits.dim(1); ++k)
      if (logits[b * logits.dim(1) + k] > logits[b * logits.dim(1) + best]) best = int32_t(k);
    d.labels.push_back(best);
  }
  d.source = "synthetic";
  return d;
}

}  // namespace snn_test
