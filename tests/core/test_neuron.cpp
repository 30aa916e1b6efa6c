// IF / LIF dynamics against sequences computed by hand.
#include <catch2/catch.hpp>

#include "snn/layers/neuron.hpp"
#include "test_util.hpp"

using namespace snn;

namespace {
// Runs one neuron (1 channel, 1 element, batch 1) over the inputs; returns the spikes.
std::vector<float> run(const NeuronLayer& layer, const std::vector<float>& x) {
  const int64_t T = int64_t(x.size());
  snn_test::CpuRun k(layer, {{1}});
  Tensor in({T, 1}, x), out;
  k.snn({&in}, out, StepChunk{0, T, 1});
  return out.values();
}
}  // namespace

TEST_CASE("IF neuron, reset by subtraction, v0 = θ/2", "[neuron]") {
  NeuronLayer n("n", 1, {1.0f});
  // v: 0.5 -> 0.9 (0) -> 1.3 fire -> 0.3 -> 0.7 (0) -> 1.1 fire -> 0.1 -> 0.1 (0)
  REQUIRE(run(n, {0.4f, 0.4f, 0.4f, 0.4f, 0.0f}) == std::vector<float>{0, 1, 0, 1, 0});
}

TEST_CASE("IF neuron, reset to zero loses the surplus", "[neuron]") {
  NeuronConfig cfg;
  cfg.reset = Reset::Zero;
  cfg.v_init = 0.0f;
  NeuronLayer n("n", 1, {1.0f}, SourceActivation::ReLU, 0, cfg);
  // v: 0.6, 1.2 fire -> 0, 0.6, 1.2 fire -> 0 (subtract would have kept 0.2 and fired again sooner)
  REQUIRE(run(n, {0.6f, 0.6f, 0.6f, 0.6f}) == std::vector<float>{0, 1, 0, 1});
  cfg.reset = Reset::Subtract;
  NeuronLayer s("s", 1, {1.0f}, SourceActivation::ReLU, 0, cfg);
  // v: 0.6, 1.2 fire 0.2, 0.8, 1.4 fire 0.4, 1.0 fire
  REQUIRE(run(s, {0.6f, 0.6f, 0.6f, 0.6f, 0.6f}) == std::vector<float>{0, 1, 0, 1, 1});
}

TEST_CASE("LIF neuron leaks before integrating", "[neuron]") {
  NeuronConfig cfg;
  cfg.model = NeuronModel::LIF;
  cfg.beta = 0.5f;
  cfg.v_init = 0.0f;
  NeuronLayer n("n", 1, {1.0f}, SourceActivation::ReLU, 0, cfg);
  // v: 0.6; 0.3+0.6=0.9; 0.45+0.6=1.05 fire -> 0.05; 0.025+0.6=0.625
  REQUIRE(run(n, {0.6f, 0.6f, 0.6f, 0.6f}) == std::vector<float>{0, 0, 1, 0});
  // The same input without leak fires earlier: 0.6, 1.2 fire.
  cfg.model = NeuronModel::IF;
  NeuronLayer f("f", 1, {1.0f}, SourceActivation::ReLU, 0, cfg);
  REQUIRE(run(f, {0.6f, 0.6f})[1] == 1.0f);
}

TEST_CASE("spikes carry the threshold; per-channel thresholds", "[neuron]") {
  NeuronConfig cfg;
  cfg.v_init = 0.0f;
  NeuronLayer n("n", 2, {2.0f, 0.5f}, SourceActivation::ReLU, 0, cfg);
  snn_test::CpuRun k(n, {{2, 1}});
  // Two steps, channels (c0, c1): inputs 1.0 each step.
  Tensor in({2, 2, 1}, {1.0f, 1.0f, 1.0f, 1.0f}), out;
  k.snn({&in}, out, StepChunk{0, 2, 1});
  // c0: v 1.0 (0), 2.0 fire 2.0. c1: v 1.0 fire 0.5 -> 0.5, 1.5 fire 0.5 -> 1.0
  REQUIRE(out.values() == std::vector<float>{0.0f, 0.5f, 2.0f, 0.5f});
}

TEST_CASE("temporal bias b[t][c] is subtracted at its own step only", "[neuron]") {
  NeuronConfig cfg;
  cfg.v_init = 0.0f;
  NeuronLayer n("n", 1, {1.0f}, SourceActivation::ReLU, 0, cfg);
  n.set_bias(Tensor({2, 1}, {0.5f, -0.5f}));
  // v: 1.0-0.5=0.5; 0.5+1.0+0.5=2.0 fire ->1.0; t=2 no bias row: 2.0 fire -> 1.0
  REQUIRE(run(n, {1.0f, 1.0f, 1.0f}) == std::vector<float>{0, 1, 1});
  REQUIRE(n.bias_at(5, 0) == 0.0f);
  n.set_bias(Tensor({1, 1}, {0.25f}), /*constant_over_time=*/true);
  REQUIRE(n.bias_at(5, 0) == 0.25f);
}

TEST_CASE("state carries across chunks", "[neuron]") {
  NeuronLayer n("n", 1, {1.0f});
  const std::vector<float> x = {0.3f, 0.7f, 0.2f, 0.9f, 0.4f, 0.6f};
  const std::vector<float> whole = run(n, x);
  snn_test::CpuRun k(n, {{1}});
  std::vector<float> pieces;
  for (int64_t t0 = 0; t0 < 6; t0 += 4) {
    const int64_t steps = std::min<int64_t>(4, 6 - t0);
    Tensor in({steps, 1}, std::vector<float>(x.begin() + t0, x.begin() + t0 + steps)), out;
    k.snn({&in}, out, StepChunk{t0, steps, 1});
    pieces.insert(pieces.end(), out.values().begin(), out.values().end());
  }
  REQUIRE(pieces == whole);
}

TEST_CASE("ANN view: ReLU, clip and QCFS", "[neuron]") {
  NeuronLayer relu("r", 1, {1.0f});
  NeuronLayer clip("c", 1, {2.0f}, SourceActivation::Clip);
  NeuronLayer q("q", 1, {2.0f}, SourceActivation::QCFS, 4);
  REQUIRE(relu.activate(-1.0f, 0) == 0.0f);
  REQUIRE(relu.activate(3.0f, 0) == 3.0f);
  REQUIRE(clip.activate(3.0f, 0) == 2.0f);
  REQUIRE(clip.activate(1.25f, 0) == 1.25f);
  // QCFS θ=2, L=4: steps of 0.5, rounded half up: 0.7 -> floor(1.4+0.5)/4*2 = 0.5; 0.76 -> 1.0
  REQUIRE(q.activate(0.7f, 0) == Approx(0.5f));
  REQUIRE(q.activate(0.76f, 0) == Approx(1.0f));
  REQUIRE(q.activate(5.0f, 0) == Approx(2.0f));
  REQUIRE(q.activate(-5.0f, 0) == 0.0f);
}

TEST_CASE("invalid neuron parameters are rejected with the layer named", "[neuron]") {
  REQUIRE_THROWS_WITH(NeuronLayer("bad", 2, {1.0f, 2.0f, 3.0f}), Catch::Contains("bad") && Catch::Contains("threshold"));
  REQUIRE_THROWS_WITH(NeuronLayer("neg", 1, {-1.0f}), Catch::Contains("positive"));
  NeuronConfig cfg;
  cfg.model = NeuronModel::LIF;
  cfg.beta = 1.5f;
  REQUIRE_THROWS_WITH(NeuronLayer("lif", 1, {1.0f}, SourceActivation::ReLU, 0, cfg), Catch::Contains("beta"));
  NeuronLayer n("n", 3, {1.0f});
  REQUIRE_THROWS_WITH(n.set_bias(Tensor({4, 2})), Catch::Contains("[T, 3]"));
}
