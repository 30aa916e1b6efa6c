// Helpers of the CUDA tests: run one layer's kernel on both backends, and networks whose arithmetic is
// exact (dyadic weights, inputs and thresholds: every product and sum is representable in float), so
// that any summation order — Eigen's GEMM, cuBLAS, cuDNN — gives the same bits and whole simulations
// must agree exactly, spikes included.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "core/test_util.hpp"
#include "snn/cpu/kernel.hpp"
#include "snn/cuda/context.hpp"
#include "snn/cuda/kernel.hpp"
#include "snn/layers/all.hpp"
#include "snn/network.hpp"

namespace cuda_test {

// Uniform multiples of 1/denom in [lo, hi].
inline snn::Tensor dyadic_tensor(snn::Shape shape, std::mt19937& rng, float lo, float hi, int denom) {
  snn::Tensor t(std::move(shape));
  std::uniform_int_distribution<int> u(int(std::ceil(lo * denom)), int(std::floor(hi * denom)));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = float(u(rng)) / float(denom);
  return t;
}

inline void round_to(snn::Tensor& t, float denom) {
  for (auto& v : t.values()) v = std::round(v * denom) / denom;
}

// Rounds weights and biases to multiples of 1/16, thresholds to multiples of 1/8 (at least 1/8), and sets
// a dyadic preprocessing, so every value in a simulation is exact in float.
inline void make_exact(snn::Network& net) {
  using namespace snn;
  for (int i = 0; i < net.size(); ++i) {
    Layer& l = net.layer(i);
    if (auto* c = dynamic_cast<Conv2d*>(&l)) {
      round_to(c->weight(), 16);
      round_to(c->bias(), 16);
    } else if (auto* f = dynamic_cast<Linear*>(&l)) {
      round_to(f->weight(), 16);
      round_to(f->bias(), 16);
    } else if (auto* n = dynamic_cast<NeuronLayer*>(&l)) {
      std::vector<float> th = n->threshold();
      for (auto& v : th) v = std::max(0.125f, std::round(v * 8.0f) / 8.0f);
      n->set_threshold(th);
    }
  }
  const int64_t C = net.input_shape()[0];
  Preprocessing p;
  for (int64_t c = 0; c < C; ++c) {
    p.mean.push_back(c % 2 ? 0.25f : 0.5f);
    p.std.push_back(c % 2 ? 0.25f : 0.5f);
  }
  net.set_preprocessing(p);
}

// Raw images in [0, 1], multiples of 1/64.
inline snn::Tensor exact_images(int64_t batch, const snn::Shape& sample, std::mt19937& rng) {
  snn::Shape s = {batch};
  s.insert(s.end(), sample.begin(), sample.end());
  return dyadic_tensor(s, rng, 0.0f, 1.0f, 64);
}

// One layer on both backends: kernels made from the same description and input shapes.
struct Twin {
  Twin(const snn::Layer& layer, const std::vector<snn::Shape>& shapes)
      : cpu(snn::cpu::make_kernel(layer, shapes)), gpu(snn::cuda::make_kernel(layer, shapes, context)) {}
  snn::cuda::Context context;
  std::unique_ptr<snn::cpu::Kernel> cpu;
  std::unique_ptr<snn::cuda::Kernel> gpu;

  // ANN view of both on the same inputs; returns {cpu, gpu} outputs.
  std::pair<snn::Tensor, snn::Tensor> forward(const std::vector<snn::Tensor>& inputs) {
    std::vector<const snn::Tensor*> ci;
    std::vector<snn::cuda::DeviceTensor> dev;
    for (const auto& t : inputs) {
      ci.push_back(&t);
      dev.push_back(snn::cuda::DeviceTensor::from_host(t));
    }
    std::vector<const snn::cuda::DeviceTensor*> gi;
    for (const auto& d : dev) gi.push_back(&d);
    snn::Tensor co;
    snn::cuda::DeviceTensor go;
    cpu->forward(ci, co);
    gpu->forward(gi, go);
    return {co, go.to_host()};
  }
  // The ANN view of both must agree bit for bit.
  void require_identical(const std::vector<snn::Tensor>& inputs) {
    auto [co, go] = forward(inputs);
    REQUIRE(co.shape() == go.shape());
    REQUIRE(co.values() == go.values());
  }
};

// Largest |a − b| relative to max(1, |a|), elementwise; shapes must match.
inline double max_rel_diff(const snn::Tensor& a, const snn::Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, double(std::abs(a[i] - b[i])) / std::max(1.0, double(std::abs(a[i]))));
  return m;
}

}  // namespace cuda_test
