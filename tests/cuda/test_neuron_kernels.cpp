// The fused CUDA neuron kernel against its CPU twin (snn::neuron_step): bit-identical spikes and
// membranes for IF and LIF, both resets, per-channel θ, temporal and constant biases, across chunks.
#include <catch2/catch.hpp>
#include <random>

#include "snn/cuda/device.hpp"
#include "snn/cuda/neuron_kernels.hpp"

using namespace snn;

namespace {
struct Case {
  NeuronConfig cfg;
  bool constant_bias;
};

// CPU reference over [steps, batch, C, inner] with the same bias rules as NeuronLayer::bias_at.
void cpu_reference(const std::vector<float>& x, std::vector<float>& s, std::vector<float>& v,
                   const std::vector<float>& theta, const std::vector<float>& bias, int64_t bias_steps, bool constant,
                   int64_t t0, int64_t steps, int64_t B, int64_t C, int64_t inner, const NeuronConfig& cfg) {
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t p = 0; p < B * C; ++p) {
      const int64_t c = p % C, tt = t0 + t;
      const float b = constant ? bias[size_t(c)] : (tt < bias_steps ? bias[size_t(tt * C + c)] : 0.0f);
      const int64_t off = (t * B * C + p) * inner;
      neuron_step(x.data() + off, v.data() + p * inner, s.data() + off, inner, theta[size_t(c)], b, cfg);
    }
}
}  // namespace

TEST_CASE("CUDA neuron kernel matches the CPU twin bit for bit", "[cuda]") {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.3f, 0.6f);
  const int64_t B = 5, C = 7, inner = 37, T = 13, Tb = 9;
  for (int model = 0; model < 2; ++model)
    for (int reset = 0; reset < 2; ++reset)
      for (bool constant : {false, true}) {
        NeuronConfig cfg;
        cfg.model = model ? NeuronModel::LIF : NeuronModel::IF;
        cfg.beta = 0.87f;
        cfg.reset = reset ? Reset::Zero : Reset::Subtract;
        std::vector<float> x(size_t(T * B * C * inner)), theta(static_cast<size_t>(C)), bias(size_t((constant ? 1 : Tb) * C));
        for (auto& e : x) e = n(rng);
        for (auto& e : theta) e = 0.5f + std::abs(n(rng));
        for (auto& e : bias) e = 0.2f * n(rng);
        std::vector<float> v(static_cast<size_t>(B * C * inner));
        for (int64_t p = 0; p < B * C; ++p)
          for (int64_t i = 0; i < inner; ++i) v[size_t(p * inner + i)] = 0.5f * theta[size_t(p % C)];
        std::vector<float> s_cpu(x.size()), v_cpu = v;

        auto dx = cuda::DeviceBuffer::from(x), dv = cuda::DeviceBuffer::from(v);
        auto dth = cuda::DeviceBuffer::from(theta), db = cuda::DeviceBuffer::from(bias);
        cuda::DeviceBuffer ds(x.size());
        // Two chunks (8 + 5 steps): the membrane carries across, as in the engine.
        for (int64_t t0 : {int64_t(0), int64_t(8)}) {
          const int64_t steps = t0 == 0 ? 8 : T - 8;
          const int64_t off = t0 * B * C * inner;
          cuda::NeuronKernelArgs a;
          a.x = dx.data() + off;
          a.s = ds.data() + off;
          a.v = dv.data();
          a.theta = dth.data();
          a.bias = db.data();
          a.bias_steps = constant ? 1 : Tb;
          a.bias_constant = constant;
          a.t0 = t0;
          a.steps = steps;
          a.batch = B;
          a.channels = C;
          a.inner = inner;
          a.config = cfg;
          cuda::neuron_forward(a);
          std::vector<float> xs(x.begin() + off, x.begin() + off + steps * B * C * inner), ss(xs.size());
          cpu_reference(xs, ss, v_cpu, theta, bias, constant ? 1 : Tb, constant, t0, steps, B, C, inner, cfg);
          std::copy(ss.begin(), ss.end(), s_cpu.begin() + off);
        }
        cuda::synchronize();
        INFO("model " << model << " reset " << reset << " constant bias " << constant);
        REQUIRE(ds.to_host() == s_cpu);
        REQUIRE(dv.to_host() == v_cpu);
        double spikes = 0;
        for (float e : s_cpu) spikes += e > 0;
        REQUIRE(spikes > 0);  // the case exercises firing
      }
}
