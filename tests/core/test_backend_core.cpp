// The backend-neutral pieces every backend shares: the simulation plan, the accountant, the Philox
// Poisson encoder and the neuron core.
#include <catch2/catch.hpp>

#include "snn/accountant.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/neuron_core.hpp"
#include "snn/philox.hpp"
#include "snn/simulation_plan.hpp"
#include "test_util.hpp"

using namespace snn;

TEST_CASE("simulation plan: static nodes, event streams, chunking", "[plan]") {
  std::mt19937 rng(60);
  Network net = snn_test::small_cnn(rng);  // conv1 act1 pool1 conv2 act2 flatten fc
  SimulationOptions o;
  o.timesteps = 10;
  SimulationPlan p = make_simulation_plan(net, o, 4);
  const int conv1 = net.find("conv1"), act1 = net.find("act1"), pool1 = net.find("pool1"), conv2 = net.find("conv2"),
            fc = net.find("fc");
  REQUIRE(p.is_static[size_t(conv1)]);  // reads the direct-encoded image only
  REQUIRE(!p.is_static[size_t(act1)]);
  REQUIRE(p.events[size_t(act1)]);
  REQUIRE(p.events[size_t(pool1)]);  // pooled spikes are still events
  REQUIRE(!p.events[size_t(conv2)]);
  REQUIRE(!p.counts_events[size_t(conv1)]);
  REQUIRE(p.counts_events[size_t(conv2)]);
  REQUIRE(p.counts_events[size_t(fc)]);  // fc reads flattened spikes
  REQUIRE(p.weight_nodes == std::vector<int>{conv1, conv2, fc});
  REQUIRE(p.neuron_nodes == net.neuron_nodes());
  REQUIRE(p.chunk_steps == 10);  // everything fits the default budget
  o.memory_budget = 1;           // one step per chunk at least
  REQUIRE(make_simulation_plan(net, o, 4).chunk_steps == 1);
  o.max_chunk_steps = 3;
  REQUIRE(make_simulation_plan(net, o, 4).chunk_steps == 3);
  o.encoding = Encoding::Poisson;  // the input changes every step: nothing is static
  p = make_simulation_plan(net, o, 4);
  REQUIRE(!p.is_static[size_t(conv1)]);
  REQUIRE(!p.counts_events[size_t(conv1)]);  // Poisson input is analog after normalisation
  o.timesteps = 0;
  REQUIRE_THROWS_WITH(make_simulation_plan(net, o, 4), Catch::Contains("timesteps"));
}

TEST_CASE("accountant: ACs on events, MACs on analog inputs, static layers once", "[accountant]") {
  std::mt19937 rng(61);
  Network net = snn_test::small_cnn(rng);
  SimulationOptions o;
  o.timesteps = 3;
  const SimulationPlan p = make_simulation_plan(net, o, 2);
  const int conv1 = net.find("conv1"), conv2 = net.find("conv2"), act2 = net.find("act2");
  Accountant a(p);
  a.static_weight(conv1);
  a.weight_step(conv2, 1, 25.0, 100.0);
  a.weight_step(conv2, 2, 0.0, 100.0);
  a.spikes(act2, 2, 7.0);
  a.spikes(act2, 2, 1.0);
  BatchSimulation r;
  a.finish(r);
  const double m1 = double(p.macs[size_t(conv1)]), m2 = double(p.macs[size_t(conv2)]);
  REQUIRE(r.weight_nodes == p.weight_nodes);
  REQUIRE(r.dense_macs[0] == std::vector<double>{m1 * 2, 0, 0});
  REQUIRE(r.synaptic_ops[1] == std::vector<double>{0, 0.25 * m2 * 2, 0});
  REQUIRE(r.dense_macs[1] == std::vector<double>{0, 0, 0});
  REQUIRE(r.spikes[1] == std::vector<double>{0, 0, 8});
}

TEST_CASE("Philox4x32-10 matches the published known-answer vectors", "[philox]") {
  // Random123's kat_vectors (first output word of each).
  REQUIRE(philox::philox4x32_10(0, 0, 0, 0, 0, 0) == 0x6627e8d5u);
  REQUIRE(philox::philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u) == 0x408f276du);
  REQUIRE(philox::philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u) ==
          0xd16cfe09u);
}

TEST_CASE("Poisson encoding: rate = intensity, a function of (seed, t, element) only", "[philox]") {
  double fired = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) fired += philox::poisson_pixel(3, uint64_t(i % 7), uint64_t(i), 0.3f, 0.0f, 1.0f);
  REQUIRE(fired / n == Approx(0.3).margin(0.005));
  REQUIRE(philox::poisson_pixel(3, 5, 11, 0.5f, 0.0f, 1.0f) == philox::poisson_pixel(3, 5, 11, 0.5f, 0.0f, 1.0f));
  REQUIRE(philox::poisson_pixel(1, 0, 0, 1.0f, 0.5f, 0.25f) == 2.0f);   // always fires; then (1 − 0.5)/0.25
  REQUIRE(philox::poisson_pixel(1, 0, 0, -2.0f, 0.5f, 0.25f) == -2.0f);  // never fires
  double differ = 0;
  for (int i = 0; i < 1000; ++i) differ += philox::uniform(1, 0, uint64_t(i)) != philox::uniform(2, 0, uint64_t(i));
  REQUIRE(differ > 990);
  // The engine draws per (t, element): a chunked run sees the same spikes as a whole one.
  std::mt19937 rng(62);
  Network net = snn_test::small_cnn(rng);
  CpuBackend cpu(2);
  const Tensor x = snn_test::random_tensor({3, 2, 8, 8}, rng, 0.0f, 1.0f);
  SimulationOptions o;
  o.timesteps = 9;
  o.encoding = Encoding::Poisson;
  o.seed = 5;
  const BatchSimulation whole = cpu.simulate(net, x, o);
  o.max_chunk_steps = 2;
  REQUIRE(cpu.simulate(net, x, o).spikes == whole.spikes);
  o.seed = 6;
  REQUIRE(cpu.simulate(net, x, o).spikes != whole.spikes);
}

TEST_CASE("neuron core: compile-time and run-time steps agree, and the bias lookup rules", "[neuron]") {
  std::mt19937 rng(63);
  std::normal_distribution<float> nd(0.3f, 0.7f);
  for (int model = 0; model < 2; ++model)
    for (int reset = 0; reset < 2; ++reset) {
      NeuronConfig cfg;
      cfg.model = model ? NeuronModel::LIF : NeuronModel::IF;
      cfg.reset = reset ? Reset::Zero : Reset::Subtract;
      cfg.beta = 0.9f;
      float v1 = 0.4f, v2 = 0.4f, count = 0.0f;
      int spikes = 0;
      for (int t = 0; t < 200; ++t) {
        const float x = nd(rng), b = 0.1f * nd(rng);
        const float s1 = neuron::step(v1, count, x, b, 1.0f, cfg);
        float s2 = -1.0f;
        neuron::dispatch(cfg, [&](auto leaky, auto zero) {
          s2 = neuron::step<decltype(leaky)::value, decltype(zero)::value>(v2, x, b, 1.0f, cfg.beta);
        });
        REQUIRE(s1 == s2);
        REQUIRE(v1 == v2);
        REQUIRE((s1 == 0.0f || s1 == 1.0f));
        spikes += s1 > 0;
      }
      REQUIRE(spikes > 0);
    }
  float v = 0.95f;  // LIF: leak first, then integrate: 0.5·0.95 + 0.6 − 0.1 = 0.975 < 1, no spike
  REQUIRE(neuron::step<true, false>(v, 0.6f, 0.1f, 1.0f, 0.5f) == 0.0f);
  REQUIRE(v == Approx(0.975f));
  const float bias[] = {1, 2, 3, 4};  // [2 steps, 2 channels]
  REQUIRE(neuron::temporal_bias(bias, 2, false, 1, 2, 1) == 4.0f);
  REQUIRE(neuron::temporal_bias(bias, 2, false, 2, 2, 1) == 0.0f);  // beyond the rows: no bias
  REQUIRE(neuron::temporal_bias(bias, 1, true, 9, 2, 1) == 2.0f);   // one row constant over time
  REQUIRE(neuron::temporal_bias(nullptr, 0, false, 0, 2, 0) == 0.0f);
  REQUIRE(neuron::initial_membrane(0.5f, 3.0f) == 1.5f);
}
