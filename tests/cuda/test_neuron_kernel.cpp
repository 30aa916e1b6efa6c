// The fused CUDA neuron kernel against its CPU twin: bit-identical spikes and membranes for IF and LIF,
// both resets, per-channel θ, temporal (shorter than T), constant and no bias, across chunks; the ANN
// view (ReLU, clip, QCFS) bit for bit; and the calibration replay (commit, restore, nudge) exactly.
// Signed neurons (with and without a spike cap and threshold scale) likewise, their counts included.
#include <catch2/catch.hpp>

#include "cuda_test_util.hpp"
#include "snn/cpu/neuron_kernel.hpp"
#include "snn/cuda/neuron_kernel.hpp"

using namespace snn;

namespace {

enum class BiasKind { None, Temporal, Constant };

NeuronLayer make_layer(int64_t C, NeuronModel model, Reset reset, BiasKind bias, std::mt19937& rng,
                       SourceActivation act = SourceActivation::ReLU, int levels = 0) {
  std::vector<float> theta(static_cast<size_t>(C));
  for (auto& t : theta) t = std::uniform_real_distribution<float>(0.5f, 1.5f)(rng);
  NeuronConfig cfg;
  cfg.model = model;
  cfg.beta = 0.87f;
  cfg.reset = reset;
  cfg.v_init = 0.37f;
  NeuronLayer l("act", C, theta, act, levels, cfg);
  if (bias == BiasKind::Temporal) l.set_bias(snn_test::random_tensor({9, C}, rng, -0.2f, 0.2f));
  if (bias == BiasKind::Constant) l.set_bias(snn_test::random_tensor({1, C}, rng, -0.2f, 0.2f), true);
  return l;
}

Tensor membrane(cpu::KernelState& s) { return static_cast<cpu::NeuronKernel::State&>(s).v; }
Tensor membrane(cuda::KernelState& s) { return static_cast<cuda::NeuronKernel::State&>(s).v.to_host(); }
Tensor counts(cpu::KernelState& s) { return static_cast<cpu::NeuronKernel::State&>(s).count; }
Tensor counts(cuda::KernelState& s) { return static_cast<cuda::NeuronKernel::State&>(s).count.to_host(); }

// The same layer with signed spikes; capped: at most 3 net spikes, threshold scaled by 1.5.
NeuronLayer signed_layer(NeuronLayer layer, bool capped) {
  NeuronConfig cfg = layer.config();
  cfg.spikes = Spikes::Signed;
  cfg.reset = Reset::Subtract;
  if (capped) cfg.max_spikes = 3.0f, cfg.threshold_scale = 1.5f;
  layer.set_config(cfg);
  return layer;
}

}  // namespace

TEST_CASE("cuda neuron kernel matches the CPU twin bit for bit", "[kernels][neuron]") {
  std::mt19937 rng(21);
  const int64_t B = 5, C = 7;
  const Shape in = {C, 6, 5};
  for (NeuronModel model : {NeuronModel::IF, NeuronModel::LIF})
    for (Reset reset : {Reset::Subtract, Reset::Zero})
      for (BiasKind bias : {BiasKind::None, BiasKind::Temporal, BiasKind::Constant}) {
        INFO(to_string(model) << ", reset " << to_string(reset) << ", bias kind " << int(bias));
        NeuronLayer layer = make_layer(C, model, reset, bias, rng);
        cuda_test::Twin twin(layer, {in});
        auto cs = twin.cpu->make_state(B);
        auto gs = twin.gpu->make_state(B);
        REQUIRE(membrane(*gs).values() == membrane(*cs).values());  // v_init·θ
        int64_t t0 = 0;
        double spikes = 0;
        for (int64_t steps : {5, 4, 4}) {  // T = 13 > the 9 bias rows: the last steps run without bias
          Tensor x = snn_test::random_tensor({steps * B, C, 6, 5}, rng, -0.4f, 1.0f);
          Tensor co;
          cuda::DeviceTensor dx = cuda::DeviceTensor::from_host(x), go;
          const StepChunk chunk{t0, steps, B};
          twin.cpu->forward_snn({&x}, co, cs.get(), chunk);
          twin.gpu->forward_snn({&dx}, go, gs.get(), chunk);
          INFO("chunk at t0 = " << t0);
          REQUIRE(go.shape() == co.shape());
          REQUIRE(go.to_host().values() == co.values());
          REQUIRE(membrane(*gs).values() == membrane(*cs).values());
          for (float v : co.values()) spikes += v != 0.0f;
          t0 += steps;
        }
        REQUIRE(spikes > 0);  // the case exercises firing
      }
}

TEST_CASE("cuda neuron kernel's ANN view matches the CPU twin bit for bit", "[kernels][neuron]") {
  std::mt19937 rng(22);
  const int64_t C = 6;
  for (auto [act, levels] : {std::pair{SourceActivation::ReLU, 0}, std::pair{SourceActivation::Clip, 0},
                             std::pair{SourceActivation::QCFS, 4}, std::pair{SourceActivation::QCFS, 8}}) {
    INFO(to_string(act) << " L=" << levels);
    NeuronLayer layer = make_layer(C, NeuronModel::IF, Reset::Subtract, BiasKind::None, rng, act, levels);
    for (const Shape& in : {Shape{C, 4, 4}, Shape{C}}) {
      cuda_test::Twin twin(layer, {in});
      Shape xs = {9};
      xs.insert(xs.end(), in.begin(), in.end());
      auto [co, go] = twin.forward({snn_test::random_tensor(xs, rng, -1.0f, 2.0f)});
      REQUIRE(co.values() == go.values());
    }
  }
}

TEST_CASE("cuda neuron replay matches the CPU twin exactly", "[kernels][neuron]") {
  std::mt19937 rng(23);
  const int64_t B = 4, C = 5, steps = 3;
  const Shape in = {C, 3, 3};
  for (NeuronModel model : {NeuronModel::IF, NeuronModel::LIF}) {
    NeuronLayer layer = make_layer(C, model, Reset::Subtract, BiasKind::None, rng);
    cpu::NeuronKernel ck(layer, in);
    cuda::Context ctx;
    cuda::NeuronKernel gk(layer, in, ctx);
    auto cs = ck.make_state(B);
    auto gs = gk.make_state(B);
    Tensor x = snn_test::random_tensor({steps * B, C, 3, 3}, rng, -0.3f, 1.2f);
    Tensor ann = snn_test::random_tensor({B, C, 3, 3}, rng, 0.0f, 1.0f);
    cuda::DeviceTensor dx = cuda::DeviceTensor::from_host(x), dann = cuda::DeviceTensor::from_host(ann);
    const StepChunk chunk{8, steps, B};
    for (int64_t t = 0; t < steps; ++t)
      for (auto [commit, nudge] : {std::pair{false, 0.0f}, std::pair{true, 0.0f}, std::pair{true, 0.5f}}) {
        INFO(to_string(model) << " step " << t << " commit " << commit << " nudge " << nudge);
        std::vector<float> row(static_cast<size_t>(C));
        for (auto& b : row) b = std::uniform_real_distribution<float>(-0.1f, 0.1f)(rng);
        std::vector<double> csum(size_t(C), 0.0), gsum(size_t(C), 0.0);
        ck.replay_step(x, chunk, t, row.data(), cs.get(), commit, nudge, &ann, csum);
        gk.replay_step(dx, chunk, t, row, gs.get(), commit, nudge, &dann, gsum);
        REQUIRE(gsum == csum);  // sums of spikes (multiples of θ) are exact in double
        REQUIRE(membrane(*gs).values() == membrane(*cs).values());
      }
  }
}

TEST_CASE("cuda signed neurons match the CPU twin bit for bit, counts included", "[kernels][neuron]") {
  std::mt19937 rng(24);
  const int64_t B = 5, C = 7;
  const Shape in = {C, 6, 5};
  for (NeuronModel model : {NeuronModel::IF, NeuronModel::LIF})
    for (bool capped : {false, true}) {
      INFO(to_string(model) << (capped ? ", capped" : ""));
      NeuronLayer layer = signed_layer(make_layer(C, model, Reset::Subtract, BiasKind::Temporal, rng), capped);
      cuda_test::Twin twin(layer, {in});
      auto cs = twin.cpu->make_state(B);
      auto gs = twin.gpu->make_state(B);
      int64_t t0 = 0;
      double negative = 0;
      for (int64_t steps : {5, 4, 4}) {
        // Inputs swing both ways, so neurons fire early and must take spikes back later.
        Tensor x = snn_test::random_tensor({steps * B, C, 6, 5}, rng, -1.0f, 1.0f);
        Tensor co;
        cuda::DeviceTensor dx = cuda::DeviceTensor::from_host(x), go;
        const StepChunk chunk{t0, steps, B};
        twin.cpu->forward_snn({&x}, co, cs.get(), chunk);
        twin.gpu->forward_snn({&dx}, go, gs.get(), chunk);
        INFO("chunk at t0 = " << t0);
        REQUIRE(go.to_host().values() == co.values());
        REQUIRE(membrane(*gs).values() == membrane(*cs).values());
        REQUIRE(counts(*gs).values() == counts(*cs).values());
        for (float v : co.values()) negative += v < 0.0f;
        t0 += steps;
      }
      REQUIRE(negative > 0);  // the case exercises negative spikes
    }
  // Replays: trial, commit, nudge.
  for (bool capped : {false, true}) {
    NeuronLayer layer = signed_layer(make_layer(C, NeuronModel::IF, Reset::Subtract, BiasKind::None, rng), capped);
    cpu::NeuronKernel ck(layer, in);
    cuda::Context ctx;
    cuda::NeuronKernel gk(layer, in, ctx);
    auto cs = ck.make_state(B);
    auto gs = gk.make_state(B);
    const int64_t steps = 4;
    Tensor x = snn_test::random_tensor({steps * B, C, 6, 5}, rng, -1.0f, 1.2f);
    Tensor ann = snn_test::random_tensor({B, C, 6, 5}, rng, 0.0f, 1.0f);
    cuda::DeviceTensor dx = cuda::DeviceTensor::from_host(x), dann = cuda::DeviceTensor::from_host(ann);
    const StepChunk chunk{0, steps, B};
    for (int64_t t = 0; t < steps; ++t)
      for (auto [commit, nudge] : {std::pair{false, 0.0f}, std::pair{true, 0.0f}, std::pair{true, 0.5f}}) {
        INFO("replay step " << t << " commit " << commit << " nudge " << nudge << (capped ? ", capped" : ""));
        std::vector<float> row(static_cast<size_t>(C));
        for (auto& b : row) b = std::uniform_real_distribution<float>(-0.1f, 0.1f)(rng);
        std::vector<double> csum(size_t(C), 0.0), gsum(size_t(C), 0.0);
        ck.replay_step(x, chunk, t, row.data(), cs.get(), commit, nudge, &ann, csum);
        gk.replay_step(dx, chunk, t, row, gs.get(), commit, nudge, &dann, gsum);
        REQUIRE(gsum == csum);
        REQUIRE(membrane(*gs).values() == membrane(*cs).values());
        REQUIRE(counts(*gs).values() == counts(*cs).values());
      }
  }
}
