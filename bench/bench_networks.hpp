// Benchmark networks with random weights (He initialisation, seeded) and thresholds set from the ANN
// view, for the benchmarks in bench/ (header-only; uses the core's public API only).
//
//   vgg_fmnist()         1x28x28: conv32-conv32-avgpool-conv64-conv64-avgpool-fc256-fc10, the VGG-style
//                        Fashion-MNIST network of examples/train_cnn.py (without BN: it is folded).
//   resnet18_imagenet()  3x224x224: torchvision's ResNet-18 with BN folded into conv biases: conv7x7 s2 p3
//                        -> neuron -> maxpool 3x3 s2 p1 -> 4 stages x 2 BasicBlocks (64, 128, 256, 512
//                        channels; the first block of stages 2-4 has stride 2 and a 1x1 stride-2 conv
//                        shortcut; block = conv3x3 -> neuron -> conv3x3, + shortcut, -> neuron) ->
//                        AvgPool2d 7x7 -> flatten -> fc 1000.
//   set_thresholds_from_ann()  each neuron layer's θ = the p-th percentile (p = 100: the maximum) of the
//                        layer's positive ANN-view activations on a batch of images, layer by layer.
//
// Every neuron is IF, subtract reset, v_init = θ/2, ReLU source activation (the defaults). Conv and
// linear weights ~ N(0, 2/fan_in) (He), biases ~ N(0, 0.01²); the readout has no bias.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "snn/backend.hpp"
#include "snn/layers/all.hpp"
#include "snn/network.hpp"
#include "snn/tensor.hpp"

namespace snn::bench {

// N(0, scale²) entries from a seeded generator (std::normal_distribution: libstdc++'s algorithm).
inline Tensor normal_tensor(Shape shape, std::mt19937_64& rng, float scale) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> n(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = n(rng);
  return t;
}

// n images of the given per-sample shape, uniform in [0, 1).
inline Tensor random_images(int64_t n, const Shape& sample, uint64_t seed) {
  Shape s = {n};
  s.insert(s.end(), sample.begin(), sample.end());
  Tensor t(s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = u(rng);
  return t;
}

namespace detail {

// conv (He weights, small bias) appended to net, reading `input`; returns the node index.
inline int conv(Network& net, std::mt19937_64& rng, const std::string& name, int input, int64_t cin, int64_t cout,
                int64_t k, int64_t stride, int64_t pad, bool bias = true) {
  const float he = std::sqrt(2.0f / float(cin * k * k));
  Tensor b = bias ? normal_tensor({cout}, rng, 0.01f) : Tensor();
  return net.add(std::make_unique<Conv2d>(name, Conv2dSpec{cin, cout, k, k, stride, stride, pad, pad, 1},
                                          normal_tensor({cout, cin, k, k}, rng, he), std::move(b)),
                 {input});
}

inline int neuron(Network& net, const std::string& name, int input, int64_t channels) {
  return net.add(std::make_unique<NeuronLayer>(name, channels, std::vector<float>{1.0f}), {input});
}

inline int linear(Network& net, std::mt19937_64& rng, const std::string& name, int input, int64_t in, int64_t out,
                  bool bias) {
  Tensor b = bias ? normal_tensor({out}, rng, 0.01f) : Tensor();
  return net.add(std::make_unique<Linear>(name, normal_tensor({out, in}, rng, std::sqrt(2.0f / float(in))),
                                          std::move(b)),
                 {input});
}

}  // namespace detail

// conv32-conv32-avgpool-conv64-conv64-avgpool-fc256-fc10 on 1x28x28 (thresholds 1 until set).
inline Network vgg_fmnist(uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  Network net({1, 28, 28});
  int x = Network::kInput;
  auto block = [&](const std::string& name, int64_t cin, int64_t cout) {
    x = detail::conv(net, rng, name, x, cin, cout, 3, 1, 1);
    x = detail::neuron(net, name + ".act", x, cout);
  };
  block("conv1", 1, 32);
  block("conv2", 32, 32);
  x = net.add(std::make_unique<AvgPool2d>("pool1", PoolSpec{2, 2, 2, 2, 0, 0}), {x});
  block("conv3", 32, 64);
  block("conv4", 64, 64);
  x = net.add(std::make_unique<AvgPool2d>("pool2", PoolSpec{2, 2, 2, 2, 0, 0}), {x});
  x = net.add(std::make_unique<Flatten>("flatten"), {x});
  x = detail::linear(net, rng, "fc1", x, 64 * 7 * 7, 256, true);
  x = detail::neuron(net, "fc1.act", x, 256);
  detail::linear(net, rng, "fc2", x, 256, 10, false);
  net.metadata()["source"] = "bench/bench_networks.hpp vgg_fmnist (random He weights, seed " +
                             std::to_string(seed) + ")";
  return net;
}

// ResNet-18 (torchvision layout, BN folded into conv biases) on 3x224x224 (thresholds 1 until set).
inline Network resnet18_imagenet(uint64_t seed = 1, int64_t classes = 1000) {
  std::mt19937_64 rng(seed);
  Network net({3, 224, 224});
  int x = detail::conv(net, rng, "conv1", Network::kInput, 3, 64, 7, 2, 3);
  x = detail::neuron(net, "conv1.act", x, 64);
  x = net.add(std::make_unique<MaxPool2d>("maxpool", PoolSpec{3, 3, 2, 2, 1, 1}), {x});
  int64_t cin = 64;
  const int64_t widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < 2; ++b) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      const int64_t cout = widths[stage];
      const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      const int in = x;
      int y = detail::conv(net, rng, p + ".conv1", in, cin, cout, 3, stride, 1);
      y = detail::neuron(net, p + ".act1", y, cout);
      y = detail::conv(net, rng, p + ".conv2", y, cout, cout, 3, 1, 1);
      int shortcut = in;
      if (stride != 1 || cin != cout) shortcut = detail::conv(net, rng, p + ".downsample", in, cin, cout, 1, stride, 0);
      y = net.add(std::make_unique<Add>(p + ".add"), {y, shortcut});
      x = detail::neuron(net, p + ".act2", y, cout);
      cin = cout;
    }
  }
  x = net.add(std::make_unique<AvgPool2d>("avgpool", PoolSpec{7, 7, 7, 7, 0, 0}), {x});
  x = net.add(std::make_unique<Flatten>("flatten"), {x});
  detail::linear(net, rng, "fc", x, 512, classes, true);
  net.metadata()["source"] = "bench/bench_networks.hpp resnet18_imagenet (random He weights, seed " +
                             std::to_string(seed) + ")";
  return net;
}

// "vgg" | "resnet18" -> the network; throws on anything else.
inline Network make_bench_network(const std::string& kind, uint64_t seed) {
  if (kind == "vgg") return vgg_fmnist(seed);
  if (kind == "resnet18") return resnet18_imagenet(seed);
  throw std::runtime_error("unknown network '" + kind + "' (expected vgg or resnet18)");
}

// Images used to set thresholds by default: enough values per layer, cheap on a CPU.
inline int64_t default_threshold_images(const std::string& kind) { return kind == "resnet18" ? 8 : 128; }

// p-th percentile (linear interpolation between order statistics, numpy's default); p in [0, 100].
inline double percentile_of(std::vector<float>& v, double p) {
  if (v.empty()) throw std::runtime_error("percentile of an empty set");
  const size_t n = v.size();
  const double pos = p / 100.0 * double(n - 1);
  const size_t lo = std::min(n - 1, size_t(std::floor(pos)));
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(lo), v.end());
  const double a = v[lo];
  if (lo + 1 >= n) return a;
  const double b = *std::min_element(v.begin() + std::ptrdiff_t(lo) + 1, v.end());
  return a + (pos - double(lo)) * (b - a);
}

// Sets every neuron layer's threshold to the p-th percentile (p = 100: the maximum) of its positive
// ANN-view activations on `images` (raw images, [N, C, H, W]), as a converter does. Percentiles are
// taken over positive values (zeros are neurons at rest); a layer with none gets θ = 1. θ is at least
// 1e-3. Layers are done in order; since the ANN view of a ReLU neuron does not depend on θ, one ANN pass
// serves all ReLU layers, and a pass is repeated only after a clip/QCFS layer changed. Returns the θs.
inline std::vector<float> set_thresholds_from_ann(Network& net, Backend& backend, const Tensor& images,
                                                  double percentile = 99.9) {
  if (!(percentile > 0.0 && percentile <= 100.0))
    throw std::runtime_error("threshold percentile must be in (0, 100], got " + std::to_string(percentile));
  std::vector<float> chosen;
  std::vector<Tensor> outs;
  bool stale = true;
  for (int i : net.neuron_nodes()) {
    if (stale) {
      outs.clear();
      backend.forward_ann(net, images, &outs);
      stale = false;
    }
    std::vector<float> pos;
    for (float v : outs.at(size_t(i)).values())
      if (v > 0.0f && std::isfinite(v)) pos.push_back(v);
    float theta = 1.0f;
    if (!pos.empty()) {
      const double q = percentile >= 100.0 ? double(*std::max_element(pos.begin(), pos.end()))
                                           : percentile_of(pos, percentile);
      theta = std::max(1e-3f, float(q));
    }
    net.neuron(i).set_threshold({theta});
    chosen.push_back(theta);
    if (net.neuron(i).activation() != SourceActivation::ReLU) stale = true;
  }
  return chosen;
}

}  // namespace snn::bench
