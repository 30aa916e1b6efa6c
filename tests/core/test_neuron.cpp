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

TEST_CASE("spikes carry the threshold, per-channel thresholds too", "[neuron]") {
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

namespace {
NeuronLayer signed_neuron(float max_spikes = NeuronConfig::kNoSpikeCap, float scale = 1.0f) {
  NeuronConfig cfg;
  cfg.spikes = Spikes::Signed;
  cfg.max_spikes = max_spikes;
  cfg.threshold_scale = scale;
  return NeuronLayer("s", 1, {1.0f}, SourceActivation::Clip, 0, cfg);
}
}  // namespace

TEST_CASE("signed neuron takes back a spike its later input does not warrant", "[neuron]") {
  // v: 0.5+1.2 = 1.7 fire (n 1) -> 0.7; -0.2 < 0 with n = 1: −1 (n 0) -> 0.8; 0.3; 0.3 (n = 0: no more).
  REQUIRE(run(signed_neuron(), {1.2f, -0.9f, -0.5f, 0.0f}) == std::vector<float>{1, -1, 0, 0});
  // A binary neuron keeps the early spike: net output 1 for a summed input of −0.2.
  REQUIRE(run(NeuronLayer("b", 1, {1.0f}), {1.2f, -0.9f, -0.5f, 0.0f}) == std::vector<float>{1, 0, 0, 0});
}

TEST_CASE("signed neuron's net count is the rounded ReLU of its summed input at every step", "[neuron]") {
  // Dyadic inputs in (−θ, θ): every float sum is exact, and one spike per step can always keep up.
  std::mt19937 rng(71);
  std::uniform_int_distribution<int> level(-60, 60);
  for (float cap : {NeuronConfig::kNoSpikeCap, 5.0f}) {
    std::vector<float> x(200);
    for (auto& v : x) v = float(level(rng)) / 64.0f;
    const std::vector<float> s = run(signed_neuron(cap), x);
    double sum = 0.0, n = 0.0;
    int negative = 0;
    for (size_t t = 0; t < x.size(); ++t) {
      sum += x[t];
      n += s[t];
      negative += s[t] < 0;
      const double expected = std::min(double(cap), std::max(0.0, std::floor(sum + 0.5)));
      INFO("cap " << cap << ", step " << t + 1 << ", summed input " << sum);
      REQUIRE(n == expected);
    }
    REQUIRE(negative > 5);
  }
}

TEST_CASE("a signed neuron's threshold scale sets its SNN threshold and spike, not its ANN view", "[neuron]") {
  const NeuronLayer n = signed_neuron(2.0f, 4.0f);
  REQUIRE(n.spike_threshold(0) == 4.0f);
  REQUIRE(n.activate(3.0f, 0) == 1.0f);  // the ANN view clips at θ = 1, not at 4
  // v0 = 2: 2+2.5 = 4.5 fire 4 (n 1) -> 0.5; 3 -> 3.5 <4; 4 -> 7.5 fire (n 2) -> 3.5; 8 -> 11.5, capped.
  REQUIRE(run(n, {2.5f, 3.0f, 4.0f, 8.0f}) == std::vector<float>{4, 0, 4, 0});
}

TEST_CASE("invalid signed-spike settings are refused with the layer named", "[neuron]") {
  NeuronConfig cfg;
  cfg.spikes = Spikes::Signed;
  cfg.reset = Reset::Zero;
  REQUIRE_THROWS_WITH(NeuronLayer("act9", 1, {1.0f}, SourceActivation::ReLU, 0, cfg),
                      Catch::Contains("act9") && Catch::Contains("reset by subtraction"));
  NeuronConfig cap;
  cap.max_spikes = 4.0f;  // binary
  REQUIRE_THROWS_WITH(NeuronLayer("a", 1, {1.0f}, SourceActivation::ReLU, 0, cap), Catch::Contains("signed"));
  cap.spikes = Spikes::Signed;
  cap.max_spikes = 2.5f;
  REQUIRE_THROWS_WITH(NeuronLayer("a", 1, {1.0f}, SourceActivation::ReLU, 0, cap), Catch::Contains("whole number"));
  NeuronConfig scale;
  scale.threshold_scale = 2.0f;  // binary
  REQUIRE_THROWS_WITH(NeuronLayer("a", 1, {1.0f}, SourceActivation::ReLU, 0, scale), Catch::Contains("signed"));
  REQUIRE_THROWS_WITH(parse_spikes("ternary"), Catch::Contains("binary or signed"));
}

TEST_CASE("the CPU kernel steps every plane like the neuron core, in groups of planes with a ragged tail",
          "[neuron]") {
  // 3 images × 37 channels of 5 positions: the kernel steps the planes in groups of consecutive ones
  // (neuron_kernel.cpp), here several groups per thread and a last one shorter than the others. Each
  // neuron must see exactly its own input sequence: the scalar core, neuron by neuron, is the reference,
  // with per-channel thresholds, a temporal bias, and a residual input fused into the layer.
  std::mt19937 rng(7);
  const int64_t B = 3, C = 37, P = 5, T = 6;
  std::vector<float> theta(static_cast<size_t>(C));
  for (auto& th : theta) th = std::uniform_real_distribution<float>(0.5f, 1.5f)(rng);
  for (const bool leaky : {false, true}) {
    NeuronConfig cfg;
    if (leaky) {
      cfg.model = NeuronModel::LIF;
      cfg.beta = 0.75f;
    }
    NeuronLayer n("n", C, theta, SourceActivation::ReLU, 0, cfg);
    n.set_bias(snn_test::random_tensor({T, C}, rng, -0.2f, 0.2f));
    const Tensor x = snn_test::random_tensor({T * B, C, P}, rng, -0.5f, 1.0f);
    const Tensor x2 = snn_test::random_tensor({T * B, C, P}, rng, -0.5f, 1.0f);
    snn_test::CpuRun k(n, {{C, P}}, B);
    Tensor out;
    k.snn({&x, &x2}, out, StepChunk{0, T, B});
    REQUIRE(out.numel() == T * B * C * P);
    const std::vector<int64_t>& fired = *k.kernel->output_nonzeros();
    std::vector<int64_t> want_fired(size_t(T), 0);
    for (int64_t i = 0; i < B * C * P; ++i) {
      const int64_t c = i / P % C;
      float v = neuron::initial_membrane(cfg.v_init, theta[size_t(c)]), count = 0;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t at = t * B * C * P + i;
        const float s = neuron::step(v, count, x.data()[at] + x2.data()[at], n.bias_at(t, c), theta[size_t(c)], cfg);
        INFO("leaky " << leaky << ", neuron " << i << ", step " << t);
        REQUIRE(out.data()[at] == s);
        want_fired[size_t(t)] += s != 0.0f;
      }
    }
    REQUIRE(fired == want_fired);
  }
}
