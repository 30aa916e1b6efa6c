// The CPU engine: SNN ↔ ANN agreement, the anytime readout, chunking, static layers, probes.
#include <catch2/catch.hpp>
#include <map>

#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "snn/sweep.hpp"
#include "test_util.hpp"

using namespace snn;
using snn_test::random_tensor;

namespace {
Tensor images(std::mt19937& rng, int64_t n = 6) { return random_tensor({n, 2, 8, 8}, rng, 0.0f, 1.0f); }
}  // namespace

TEST_CASE("one QCFS layer with T = L reproduces the ANN exactly", "[engine]") {
  // With v0 = θ/2 and constant input x, an IF neuron fires floor(T·x/θ + 1/2) times in T steps (capped at T):
  // exactly the QCFS activation with L = T. So the mean readout equals the ANN's logits.
  std::mt19937 rng(10);
  const int L = 8;
  Network net({2, 8, 8});
  net.add(std::make_unique<Conv2d>("conv", Conv2dSpec{2, 3, 3, 3, 1, 1, 1, 1, 1},
                                   random_tensor({3, 2, 3, 3}, rng), random_tensor({3}, rng)));
  net.add(std::make_unique<NeuronLayer>("q", 3, std::vector<float>{0.7f, 1.0f, 1.3f}, SourceActivation::QCFS, L));
  net.add(std::make_unique<Flatten>("flat"));
  net.add(std::make_unique<Linear>("fc", random_tensor({5, 3 * 64}, rng), random_tensor({5}, rng)));
  CpuBackend cpu(2);
  const Tensor x = images(rng);
  const Tensor ann = cpu.forward_ann(net, x);
  SimulationOptions o;
  o.timesteps = L;
  const BatchSimulation s = cpu.simulate(net, x, o);
  Tensor mean = s.readout;
  for (int64_t i = 0; i < mean.numel(); ++i) mean[i] /= float(L);
  REQUIRE(max_abs_diff(mean, ann) < 1e-4f);
}

TEST_CASE("deep SNN converges to the ANN as T grows", "[engine]") {
  std::mt19937 rng(11);
  for (bool residual : {false, true}) {
    Network net = snn_test::small_cnn(rng, SourceActivation::Clip, 0, false, residual);
    CpuBackend cpu(2);
    const Tensor x = images(rng);
    const Tensor ann = cpu.forward_ann(net, x);
    auto err_at = [&](int64_t T) {
      SimulationOptions o;
      o.timesteps = T;
      Tensor mean = cpu.simulate(net, x, o).readout;
      for (int64_t i = 0; i < mean.numel(); ++i) mean[i] /= float(T);
      return max_abs_diff(mean, ann);
    };
    const float e8 = err_at(8), e512 = err_at(512);
    INFO("residual " << residual << ": error at T=8 " << e8 << ", at T=512 " << e512);
    REQUIRE(e512 < 0.05f);
    REQUIRE(e512 < e8 / 4);
  }
}

TEST_CASE("anytime readout: one T_max run gives the predictions of every shorter run", "[engine]") {
  std::mt19937 rng(12);
  Network net = snn_test::small_cnn(rng, SourceActivation::ReLU, 0, true);
  CpuBackend cpu(2);
  const Tensor x = images(rng, 9);
  for (Encoding enc : {Encoding::Direct, Encoding::Poisson}) {
    SimulationOptions o;
    o.timesteps = 20;
    o.encoding = enc;
    o.seed = 7;
    const BatchSimulation full = cpu.simulate(net, x, o);
    for (int64_t t : {1, 2, 5, 13}) {
      SimulationOptions ot = o;
      ot.timesteps = t;
      const BatchSimulation part = cpu.simulate(net, x, ot);
      INFO("encoding " << to_string(enc) << ", t = " << t);
      REQUIRE(std::vector<int32_t>(full.predictions.begin(), full.predictions.begin() + t * 9) == part.predictions);
      for (size_t l = 0; l < part.spikes.size(); ++l)
        REQUIRE(std::vector<double>(full.spikes[l].begin(), full.spikes[l].begin() + t) == part.spikes[l]);
    }
  }
}

TEST_CASE("chunking over time does not change results", "[engine]") {
  std::mt19937 rng(13);
  Network net = snn_test::small_cnn(rng, SourceActivation::ReLU, 0, true, true);
  CpuBackend cpu(2);
  const Tensor x = images(rng);
  SimulationOptions o;
  o.timesteps = 11;
  const BatchSimulation whole = cpu.simulate(net, x, o);
  for (int64_t chunk : {1, 3, 4}) {
    o.max_chunk_steps = chunk;
    const BatchSimulation c = cpu.simulate(net, x, o);
    INFO("chunk " << chunk);
    REQUIRE(c.predictions == whole.predictions);
    REQUIRE(c.spikes == whole.spikes);
    REQUIRE(max_abs_diff(c.readout, whole.readout) < 1e-4f);
  }
}

TEST_CASE("thread count does not change results", "[engine]") {
  std::mt19937 rng(14);
  Network net = snn_test::small_cnn(rng);
  const Tensor x = images(rng);
  SimulationOptions o;
  o.timesteps = 6;
  CpuBackend one(1), two(2);
  const BatchSimulation a = one.simulate(net, x, o), b = two.simulate(net, x, o);
  REQUIRE(a.spikes == b.spikes);
  REQUIRE(max_abs_diff(a.readout, b.readout) < 1e-4f);
}

TEST_CASE("metrics: spike counts, synaptic and dense operations", "[engine]") {
  std::mt19937 rng(15);
  Network net = snn_test::small_cnn(rng);
  CpuBackend cpu(2);
  const Tensor x = images(rng, 4);
  SimulationOptions o;
  o.timesteps = 5;
  const BatchSimulation s = cpu.simulate(net, x, o);
  REQUIRE(s.spikes.size() == 2);
  REQUIRE(s.weight_nodes.size() == 3);  // conv1, conv2, fc
  // conv1 reads the direct-encoded image: computed once, dense MACs at the first step only.
  const double conv1_macs = double(net.layer(s.weight_nodes[0]).macs(net.input_shapes(s.weight_nodes[0])));
  REQUIRE(s.dense_macs[0][0] == conv1_macs * 4);
  REQUIRE(s.dense_macs[0][1] == 0.0);
  REQUIRE(s.synaptic_ops[0][0] == 0.0);
  // conv2 reads pooled spikes: accumulates, no more than the dense count, and > 0 when spikes flow.
  const double conv2_macs = double(net.layer(s.weight_nodes[1]).macs(net.input_shapes(s.weight_nodes[1])));
  double total = 0;
  for (int64_t t = 0; t < 5; ++t) {
    REQUIRE(s.synaptic_ops[1][size_t(t)] <= conv2_macs * 4);
    REQUIRE(s.dense_macs[1][size_t(t)] == 0.0);
    total += s.synaptic_ops[1][size_t(t)];
  }
  double spikes = 0;
  for (double v : s.spikes[0]) spikes += v;
  REQUIRE(spikes > 0);
  REQUIRE(total > 0);
  for (size_t l = 0; l < 2; ++l)
    for (double v : s.spikes[l]) REQUIRE(v <= double(numel_of(net.output_shape(net.neuron_nodes()[l]))) * 4);
}

TEST_CASE("probes see each neuron layer and change its bias in the program only", "[engine][probe]") {
  std::mt19937 rng(16);
  Network net = snn_test::small_cnn(rng);
  struct SilenceFirst : NeuronProbe {
    int first = -1;
    std::vector<int> seen;
    void before_layer(NeuronLayerAccess& layer) override {
      seen.push_back(layer.node());
      REQUIRE(layer.chunk().batch == 6);
      if (layer.node() == first) layer.set_bias(Tensor({1, 4}, 1e6f), /*constant_over_time=*/true);
    }
  } probe;
  probe.first = net.neuron_nodes()[0];
  CpuBackend cpu(2);
  auto program = cpu.prepare(net);
  SimulationOptions o;
  o.timesteps = 4;
  const BatchSimulation s = cpu.simulate(*program, images(rng), o, &probe);
  REQUIRE(probe.seen == net.neuron_nodes());
  for (double v : s.spikes[0]) REQUIRE(v == 0.0);
  bool constant = false;
  REQUIRE(program->neuron_bias(probe.first, &constant).numel() == 4);
  REQUIRE(constant);
  REQUIRE(net.neuron(probe.first).bias().empty());  // the network itself is untouched
}

TEST_CASE("probe replays run the layer's own neurons: committed replays reproduce its output", "[engine][probe]") {
  std::mt19937 rng(19);
  Network net = snn_test::small_cnn(rng, SourceActivation::QCFS, 4, true, true);
  for (int i : net.neuron_nodes()) {
    const int64_t C = net.neuron(i).channels();
    Tensor b({7, C});
    for (int64_t k = 0; k < b.numel(); ++k) b[k] = 0.05f * float(k % 5) - 0.1f;
    net.neuron(i).set_bias(b);
  }
  struct Replay : NeuronProbe {
    bool wants_ann_reference() const override { return true; }
    std::map<int, std::vector<double>> replayed;
    int checked = 0, trials = 0;
    void before_layer(NeuronLayerAccess& layer) override {
      const int64_t C = layer.channels();
      const Tensor bias = layer.bias();
      auto& r = replayed[layer.node()];
      r.clear();
      for (int64_t t = 0; t < layer.chunk().steps; ++t) {
        std::vector<float> row(bias.data() + (layer.chunk().t0 + t) * C, bias.data() + (layer.chunk().t0 + t + 1) * C);
        // An uncommitted replay with another bias leaves the membrane alone...
        std::vector<float> other(row.size(), -0.3f);
        const std::vector<double> trial = layer.replay_step(t, other, false);
        const std::vector<double> again = layer.replay_step(t, other, false);
        trials += trial == again;
        const std::vector<double> m = layer.replay_step(t, row, true);
        r.insert(r.end(), m.begin(), m.end());
      }
      REQUIRE(layer.ann_channel_means().size() == size_t(C));
    }
    void after_layer(NeuronLayerAccess& layer) override {
      const std::vector<double>& out = layer.output_channel_means();
      const auto& r = replayed[layer.node()];
      REQUIRE(out.size() == r.size());
      for (size_t k = 0; k < r.size(); ++k) REQUIRE(out[k] == Approx(r[k]).margin(1e-12));
      ++checked;
    }
  } probe;
  CpuBackend cpu(2);
  auto program = cpu.prepare(net);
  SimulationOptions o;
  o.timesteps = 7;
  o.max_chunk_steps = 3;  // chunks 0-2, 3-5, 6: the probe's membrane carries across them
  cpu.simulate(*program, images(rng), o, &probe);
  REQUIRE(probe.checked == int(net.neuron_nodes().size()) * 3);
  REQUIRE(probe.trials == 7 * int(net.neuron_nodes().size()));
}

TEST_CASE("a layer type without a kernel is refused at prepare, naming the layer and the backend", "[engine]") {
  struct Mystery : Layer {
    using Layer::Layer;
    std::string type() const override { return "mystery"; }
    Shape output_shape(const std::vector<Shape>& in) const override { return in[0]; }
    LayerRecord to_record() const override { return {type(), name(), {}, {}, {}}; }
    std::unique_ptr<Layer> clone() const override { return std::make_unique<Mystery>(*this); }
  };
  std::mt19937 rng(20);
  Network net({2, 8, 8});
  net.add(std::make_unique<Mystery>("odd"));
  net.add(std::make_unique<Flatten>("flat"));
  net.add(std::make_unique<Linear>("fc", random_tensor({3, 128}, rng)));
  CpuBackend cpu(1);
  REQUIRE_THROWS_WITH(cpu.prepare(net), Catch::Contains("'odd'") && Catch::Contains("mystery") &&
                                            Catch::Contains("cpu backend has no kernel"));
}

TEST_CASE("simulation rejects bad requests clearly", "[engine]") {
  std::mt19937 rng(17);
  Network net = snn_test::small_cnn(rng);
  CpuBackend cpu(1);
  SimulationOptions o;
  o.timesteps = 0;
  REQUIRE_THROWS_WITH(cpu.simulate(net, images(rng), o), Catch::Contains("timesteps"));
  o.timesteps = 2;
  REQUIRE_THROWS_WITH(cpu.simulate(net, random_tensor({2, 3, 8, 8}, rng), o), Catch::Contains("do not fit"));
  Network spiking_out({2, 8, 8});
  spiking_out.add(std::make_unique<NeuronLayer>("last", 2, std::vector<float>{1.0f}));
  REQUIRE_THROWS_WITH(cpu.simulate(spiking_out, images(rng), o), Catch::Contains("readout"));
}

TEST_CASE("run_sweep accuracy per t agrees with the batch predictions", "[engine]") {
  std::mt19937 rng(18);
  Network net = snn_test::small_cnn(rng);
  Dataset d;
  d.images = images(rng, 10);
  for (int i = 0; i < 10; ++i) d.labels.push_back(i % 10);
  d.num_classes = 10;
  d.source = "synthetic";
  CpuBackend cpu(2);
  SweepOptions o;
  o.sim.timesteps = 7;
  o.batch_size = 3;  // uneven batches
  const SweepResult r = run_sweep(cpu, net, d, o);
  const BatchSimulation s = cpu.simulate(net, d.images, o.sim);
  for (int64_t t = 0; t < 7; ++t) {
    int correct = 0;
    for (int b = 0; b < 10; ++b) correct += s.predictions[size_t(t * 10 + b)] == d.labels[size_t(b)];
    REQUIRE(r.accuracy[size_t(t)] == Approx(10.0 * correct));
  }
  const Tensor logits = cpu.forward_ann(net, d.images);
  int ann_correct = 0;
  for (int b = 0; b < 10; ++b) {
    int best = 0;
    for (int k = 1; k < 10; ++k) best = logits[b * 10 + k] > logits[b * 10 + best] ? k : best;
    ann_correct += best == d.labels[size_t(b)];
  }
  REQUIRE(r.ann_accuracy == Approx(10.0 * ann_correct));
  REQUIRE(r.firing_rate.size() == 2);
  REQUIRE(r.firing_rate[0][0] >= 0.0);
  REQUIRE(r.firing_rate[0][0] <= 1.0);
}
