// Channels-last activations on the CPU backend (snn/cpu/activation_layout.hpp) move numbers in memory
// only: every simulation must give the same predictions, spikes, operation counts and readout, bit for
// bit, with them on and off, on every neuron model, on both weight paths, across chunks, and on a
// program that switches between the layouts (and to a probe, which always reads NCHW).
#include <catch2/catch.hpp>

#include <random>

#include "snn/cpu/activation_layout.hpp"
#include "snn/cpu/transpose.hpp"
#include "snn/probe.hpp"
#include "test_util.hpp"

using namespace snn;

namespace {

Tensor weights(Shape shape, std::mt19937& rng, float scale) { return snn_test::random_tensor(std::move(shape), rng, -scale, scale); }

// A small ResNet: static stem with a pooling-staged neuron layer, a basic block whose shortcut is the
// pooled (NCHW) stem, a downsampling block (3×3 stride 2 and a 1×1 stride-2 shortcut, 20 channels: not
// a multiple of the 16-channel tiles), a 10-channel head (neither), global average pooling, a readout.
// Every neuron layer gets `cfg`; with `biased`, temporal biases over the first steps (and one constant);
// with `one_threshold`, one threshold per layer (as converted networks have) and biases the same for
// every channel, else per channel.
Network mini_resnet(std::mt19937& rng, const NeuronConfig& cfg, bool biased, bool one_threshold = false) {
  Network net({3, 12, 12});
  auto conv = [&](const std::string& name, int64_t cin, int64_t cout, int64_t k, int64_t stride, std::vector<int> in) {
    const Conv2dSpec s{cin, cout, k, k, stride, stride, k / 2, k / 2, 1};
    return net.add(std::make_unique<Conv2d>(name, s, weights({cout, cin, k, k}, rng, 1.2f / float(k)),
                                            weights({cout}, rng, 0.1f)),
                   std::move(in));
  };
  auto neuron = [&](const std::string& name, int64_t c, std::vector<int> in) {
    std::vector<float> theta(static_cast<size_t>(c));
    std::uniform_real_distribution<float> u(0.6f, 1.4f);
    for (auto& t : theta) t = u(rng);
    if (one_threshold) std::fill(theta.begin(), theta.end(), theta[0]);
    auto layer = std::make_unique<NeuronLayer>(name, c, theta, SourceActivation::ReLU, 0, cfg);
    if (biased) {
      const bool constant = c == 20;
      Tensor bias = weights({constant ? 1 : 4, c}, rng, 0.2f);
      if (one_threshold)  // and one bias per step: the same for every channel, different over time
        for (int64_t t = 0; t < bias.dim(0); ++t) std::fill(&bias[t * c], &bias[t * c] + c, bias[t * c]);
      layer->set_bias(bias, constant);
    }
    return net.add(std::move(layer), std::move(in));
  };
  const int stem = conv("stem", 3, 16, 3, 1, {Network::kInput});
  const int stem_act = neuron("stem.act", 16, {stem});
  const int pool = net.add(std::make_unique<MaxPool2d>("pool", PoolSpec{2, 2, 2, 2, 0, 0}), {stem_act});
  const int a1 = neuron("b1.act1", 16, {conv("b1.conv1", 16, 16, 3, 1, {pool})});
  const int b1 = net.add(std::make_unique<Add>("b1.add"), {conv("b1.conv2", 16, 16, 3, 1, {a1}), pool});
  const int o1 = neuron("b1.act2", 16, {b1});
  const int a2 = neuron("b2.act1", 20, {conv("b2.conv1", 16, 20, 3, 2, {o1})});
  const int b2 = net.add(std::make_unique<Add>("b2.add"),
                         {conv("b2.conv2", 20, 20, 3, 1, {a2}), conv("b2.down", 16, 20, 1, 2, {o1})});
  const int o2 = neuron("b2.act2", 20, {b2});
  const int h1 = neuron("head.act", 10, {conv("head.conv", 20, 10, 3, 1, {o2})});
  const int h2 = neuron("head.act2", 10, {conv("head.conv2", 10, 10, 1, 1, {h1})});
  const int gap = net.add(std::make_unique<AvgPool2d>("gap", PoolSpec{3, 3, 3, 3, 0, 0}), {h2});
  const int flat = net.add(std::make_unique<Flatten>("flatten"), {gap});
  net.add(std::make_unique<Linear>("fc", weights({5, 10}, rng, 0.6f), weights({5}, rng, 0.1f)), {flat});
  return net;
}

void require_same(const BatchSimulation& a, const BatchSimulation& b) {
  REQUIRE(a.predictions == b.predictions);
  REQUIRE(a.spikes == b.spikes);
  REQUIRE(a.synaptic_ops == b.synaptic_ops);
  REQUIRE(a.dense_macs == b.dense_macs);
  REQUIRE(max_abs_diff(a.readout, b.readout) == 0.0f);
}

int channels_last_nodes(const BatchSimulation& s) {
  int n = 0;
  for (const auto& p : s.profile) n += p.channels_last;
  return n;
}

}  // namespace

TEST_CASE("layout conversions are exact inverses and match the NCHW definition", "[channels_last]") {
  std::mt19937 rng(91);
  for (auto [c, hw] : {std::pair<int64_t, int64_t>{3, 5}, {16, 49}, {20, 9}, {64, 56}}) {
    const Tensor t = snn_test::random_tensor({3, c, 1, hw}, rng);
    Tensor last, back;
    cpu::convert_layout(t, false, last);
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p) REQUIRE(last[(s * hw + p) * c + ch] == t[(s * c + ch) * hw + p]);
    cpu::convert_layout(last, true, back);
    REQUIRE(max_abs_diff(back, t) == 0.0f);
  }
}

TEST_CASE("channels-last simulations equal NCHW ones bit for bit", "[channels_last]") {
  NeuronConfig lif;
  lif.model = NeuronModel::LIF, lif.beta = 0.9f, lif.reset = Reset::Zero;
  NeuronConfig signed_cfg;
  signed_cfg.spikes = Spikes::Signed, signed_cfg.max_spikes = 5.0f;
  const std::pair<const char*, NeuronConfig> configs[] = {{"IF", NeuronConfig{}}, {"LIF", lif}, {"signed", signed_cfg}};
  std::mt19937 rng(92);
  for (const auto& [what, cfg] : configs)
    for (bool biased : {false, true})
      for (bool one_threshold : {false, true})
      for (EventPolicy policy : {EventPolicy::Auto, EventPolicy::Events, EventPolicy::Dense}) {
        CAPTURE(what, biased, one_threshold, to_string(policy));
        const Network net = mini_resnet(rng, cfg, biased, one_threshold);
        const Tensor x = snn_test::random_tensor({5, 3, 12, 12}, rng, 0.0f, 1.5f);
        SimulationOptions o;
        o.timesteps = 7;
        o.max_chunk_steps = 3;
        CpuBackend nchw(2), last(2);
        nchw.set_event_policy(policy);
        last.set_event_policy(policy);
        nchw.set_channels_last(false);
        last.set_channels_last(true);
        const BatchSimulation a = nchw.simulate(net, x, o), b = last.simulate(net, x, o);
        REQUIRE(channels_last_nodes(a) == 0);
        // The basic block's convolutions and first neuron layer, the downsampling block, the head's
        // first convolution and neuron layer.
        REQUIRE(channels_last_nodes(b) >= 8);
        require_same(a, b);
        double spikes = 0;
        for (const auto& layer : a.spikes)
          for (double v : layer) spikes += v;
        REQUIRE(spikes > 0);  // the comparison is not between silent networks
      }
}

TEST_CASE("a program switches layouts between simulations, and probes get NCHW", "[channels_last]") {
  std::mt19937 rng(93);
  const Network net = mini_resnet(rng, NeuronConfig{}, true);
  const Tensor x = snn_test::random_tensor({4, 3, 12, 12}, rng, 0.0f, 1.5f);
  SimulationOptions o;
  o.timesteps = 6;
  CpuBackend cpu(2);
  cpu.set_event_policy(EventPolicy::Events);
  auto program = cpu.prepare(net);
  cpu.set_channels_last(true);
  const BatchSimulation first = cpu.simulate(*program, x, o);
  REQUIRE(channels_last_nodes(first) > 0);
  struct Watcher : NeuronProbe {
    int layers = 0;
    void after_layer(NeuronLayerAccess&) override { ++layers; }
  } probe;
  const BatchSimulation probed = cpu.simulate(*program, x, o, &probe);  // states laid out NCHW again
  REQUIRE(probe.layers > 0);
  REQUIRE(channels_last_nodes(probed) == 0);
  require_same(first, probed);
  const BatchSimulation again = cpu.simulate(*program, x, o);  // and back
  REQUIRE(channels_last_nodes(again) > 0);
  require_same(first, again);
  cpu.set_channels_last(false);
  require_same(first, cpu.simulate(*program, x, o));
}
