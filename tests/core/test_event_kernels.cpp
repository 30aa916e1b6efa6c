// The event-driven weight kernels (snn/cpu/event_convolution.hpp, event_linear.hpp) against the dense
// path they replace, and the CPU backend's batch slicing against one image at a time. Values are
// dyadic (small integers over powers of two), so every sum is exact in any order, with or without
// fused multiply-adds: equality is the right test, and any dropped, doubled or misplaced event shows.
#include <catch2/catch.hpp>
#include <random>

#include "snn/cpu/activation_layout.hpp"
#include "snn/cpu/event_convolution.hpp"
#include "snn/cpu/event_linear.hpp"
#include "snn/cpu/transpose.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/layers/all.hpp"
#include "test_util.hpp"

using namespace snn;

namespace {

// k/8 for k in [-8, 8].
Tensor dyadic_weights(Shape shape, std::mt19937& rng) {
  Tensor t(std::move(shape));
  std::uniform_int_distribution<int> k(-8, 8);
  for (auto& v : t.values()) v = float(k(rng)) / 8.0f;
  return t;
}

// Non-zero with probability `density`, then one of {0.25, 0.5, 1, 1.5} (spikes, and pooled spikes).
Tensor sparse_input(Shape shape, double density, std::mt19937& rng) {
  Tensor t(std::move(shape), 0.0f);
  std::bernoulli_distribution fire(density);
  std::uniform_int_distribution<int> pick(0, 3);
  const float values[] = {0.25f, 0.5f, 1.0f, 1.5f};
  for (auto& v : t.values())
    if (fire(rng)) v = values[pick(rng)];
  return t;
}

// Every neuron layer of net to signed spikes (net counts capped at 6).
void make_signed(Network& net) {
  for (int i : net.neuron_nodes()) {
    NeuronConfig cfg = net.neuron(i).config();
    cfg.spikes = Spikes::Signed;
    cfg.max_spikes = 6;
    net.neuron(i).set_config(cfg);
  }
}

void run_path(cpu::Kernel& k, EventPolicy p, const Tensor& x, Tensor& out) {
  k.set_event_policy(p);
  k.forward_snn({&x}, out, nullptr, StepChunk{0, 1, x.dim(0)});
}

}  // namespace

TEST_CASE("transpose_block moves every entry, full tiles and partial ones, and nothing else", "[events]") {
  std::mt19937 rng(70);
  for (int64_t rows : {1, 7, 16, 23, 56, 64})
    for (int64_t cols : {1, 5, 16, 40, 64}) {
      CAPTURE(rows, cols);
      const int64_t src_stride = cols + 3, dst_stride = rows + 5;
      std::vector<float> src(size_t(rows * src_stride));
      for (auto& v : src) v = float(rng() % 1000);
      std::vector<float> dst(size_t(cols * dst_stride), -1.0f);
      cpu::transpose_block(src.data(), src_stride, rows, cols, dst.data(), dst_stride);
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < dst_stride; ++i)
          REQUIRE(dst[size_t(j * dst_stride + i)] == (i < rows ? src[size_t(i * src_stride + j)] : -1.0f));
    }
}

TEST_CASE("event convolution equals the dense path on every geometry", "[events]") {
  std::mt19937 rng(71);
  struct Case {
    int64_t cin, h, w, cout, kh, kw, sh, sw, ph, pw;
  };
  // Widths below, at and above 16 (the vector tail of the event lister), strides 1-3, padding 0-2,
  // non-square kernels, output channels not a multiple of the 16-channel tiles, tiles of 128 (one over
  // several input-channel blocks, and two side by side), 1×1 kernels, input
  // channels split over several weight blocks (a partial last block), output planes small enough to be
  // gathered several samples at a time and one too large for that (bands of rows), and inputs so large
  // that the 5 samples are listed one at a time (5 waves).
  const Case cases[] = {{3, 7, 5, 10, 3, 3, 1, 1, 1, 1},    {4, 9, 17, 33, 3, 3, 2, 2, 1, 1},
                        {8, 12, 16, 16, 5, 3, 1, 2, 2, 1},  {5, 6, 40, 70, 1, 1, 1, 1, 0, 0},
                        {6, 11, 13, 20, 1, 1, 2, 2, 0, 0},  {16, 8, 8, 130, 3, 3, 3, 3, 2, 2},
                        {2, 4, 4, 1, 4, 4, 1, 1, 0, 0},     {32, 14, 14, 64, 3, 3, 1, 1, 1, 1},
                        {40, 9, 11, 70, 3, 3, 1, 1, 1, 1},  {48, 6, 7, 20, 5, 5, 1, 1, 2, 2},
                        {160, 6, 5, 70, 3, 3, 1, 1, 1, 1},  {4, 48, 48, 64, 3, 3, 1, 1, 1, 1},
                        {64, 182, 182, 16, 3, 3, 60, 60, 0, 0}, {160, 6, 5, 128, 3, 3, 1, 1, 1, 1},
                        {20, 9, 9, 256, 3, 3, 2, 2, 1, 1}};
  for (const Case& c : cases)
    for (double density : {0.0, 0.07, 0.3, 1.0}) {
      CAPTURE(c.cin, c.h, c.w, c.cout, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, density);
      const Conv2dSpec spec{c.cin, c.cout, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, 1};
      Conv2d conv("conv", spec, dyadic_weights({c.cout, c.cin, c.kh, c.kw}, rng), dyadic_weights({c.cout}, rng));
      auto kernel = cpu::make_kernel(conv, {{c.cin, c.h, c.w}});
      const Tensor x = sparse_input({5, c.cin, c.h, c.w}, density, rng);
      Tensor dense, events;
      run_path(*kernel, EventPolicy::Dense, x, dense);
      REQUIRE(std::string(kernel->last_choice().path) == "dense");
      run_path(*kernel, EventPolicy::Events, x, events);
      REQUIRE(std::string(kernel->last_choice().path) == "events");
      REQUIRE(events.shape() == dense.shape());
      REQUIRE(max_abs_diff(events, dense) == 0.0f);
    }
}

TEST_CASE("event convolution gives the same sums in every layout", "[events]") {
  // Channels-last inputs are listed as they are, channels-last outputs are copied from the band (whole
  // or per tile). Whole planes gathered together, bands of rows, several input-channel blocks, tiles of
  // 16 to 128 (full and partial).
  std::mt19937 rng(75);
  struct Case {
    int64_t cin, hw, cout, k, stride;
  };
  for (const Case& c : {Case{16, 10, 16, 3, 1}, Case{20, 9, 20, 3, 2}, Case{4, 48, 64, 3, 1}, Case{160, 6, 128, 3, 1},
                        Case{24, 12, 256, 1, 1}, Case{64, 40, 64, 3, 1}})
    for (bool in_last : {false, true})
      for (bool out_last : {false, true}) {
        CAPTURE(c.cin, c.hw, c.cout, c.k, c.stride, in_last, out_last);
        cpu::ConvGeometry g;
        g.in_channels = c.cin, g.height = g.width = c.hw, g.out_channels = c.cout, g.kernel_h = g.kernel_w = c.k;
        g.stride_h = g.stride_w = c.stride, g.pad_h = g.pad_w = c.k / 2;
        g.out_h = g.out_w = (c.hw + 2 * (c.k / 2) - c.k) / c.stride + 1;
        const Tensor w = dyadic_weights({c.cout, c.cin, c.k, c.k}, rng), b = dyadic_weights({c.cout}, rng);
        const cpu::EventConvolution conv(g, w.data(), b.data());
        const int64_t n = 3;
        const Tensor x = sparse_input({n, c.cin, c.hw, c.hw}, 0.2, rng);
        Tensor x_last, ref({n, c.cout, g.out_h, g.out_w}), out({n, c.cout, g.out_h, g.out_w}, -7.0f), out_nchw;
        cpu::convert_layout(x, false, x_last);
        conv.run(x.data(), n, ref.data());
        conv.run((in_last ? x_last : x).data(), n, out.data(), in_last, out_last);
        if (out_last) cpu::convert_layout(out, true, out_nchw);
        REQUIRE(max_abs_diff(out_last ? out_nchw : out, ref) == 0.0f);
      }
}

TEST_CASE("the geometry cases above cover every work plan of the event convolution", "[events]") {
  // Several input-channel blocks; several samples gathered together; bands of rows within one sample.
  auto plan = [](int64_t cin, int64_t hw, int64_t cout) {
    cpu::ConvGeometry g;
    g.in_channels = cin, g.height = g.width = hw, g.out_channels = cout, g.kernel_h = g.kernel_w = 3;
    g.pad_h = g.pad_w = 1, g.out_h = g.out_w = hw;
    const std::vector<float> w(size_t(cout * cin * 9), 1.0f);
    return cpu::EventConvolution(g, w.data(), nullptr);
  };
  const cpu::EventConvolution blocked = plan(160, 6, 70), small = plan(32, 14, 64), large = plan(4, 48, 64);
  CHECK(blocked.blocks() > 1);
  CHECK(small.group_samples() > 1);
  CHECK(small.band_rows() == 14);
  CHECK(large.group_samples() == 1);
  CHECK(large.band_rows() < 48);
  // A large input with a small output: the group is bounded by the inputs' event lists (memory).
  cpu::ConvGeometry g;
  g.in_channels = 64, g.height = g.width = 182, g.out_channels = 16, g.kernel_h = g.kernel_w = 3;
  g.stride_h = g.stride_w = 60, g.out_h = g.out_w = 3;  // 2 119 936 inputs, output planes of 576 bytes
  const std::vector<float> w(size_t(16 * 64 * 9), 1.0f);
  const cpu::EventConvolution wide(g, w.data(), nullptr);
  CHECK(wide.group_samples() == 1);
  CHECK(wide.wave_samples(5) == 1);  // and the samples listed at once
}

TEST_CASE("event convolution without bias, and a grouped convolution stays dense", "[events]") {
  std::mt19937 rng(72);
  Conv2d plain("plain", Conv2dSpec{4, 6, 3, 3, 1, 1, 1, 1, 1}, dyadic_weights({6, 4, 3, 3}, rng));
  auto k = cpu::make_kernel(plain, {{4, 9, 9}});
  const Tensor x = sparse_input({3, 4, 9, 9}, 0.2, rng);
  Tensor a, b;
  run_path(*k, EventPolicy::Dense, x, a);
  run_path(*k, EventPolicy::Events, x, b);
  REQUIRE(max_abs_diff(a, b) == 0.0f);

  Conv2d grouped("grouped", Conv2dSpec{4, 6, 3, 3, 1, 1, 1, 1, 2}, dyadic_weights({6, 2, 3, 3}, rng));
  auto g = cpu::make_kernel(grouped, {{4, 9, 9}});
  run_path(*g, EventPolicy::Events, x, b);
  REQUIRE(std::string(g->last_choice().path) == "dense");
}

TEST_CASE("event linear layer equals the dense path", "[events]") {
  std::mt19937 rng(73);
  for (auto [in, out] : {std::pair<int64_t, int64_t>{7, 3}, {64, 16}, {300, 130}, {3136, 256}, {33, 1000}})
    for (double density : {0.0, 0.05, 0.5, 1.0}) {
      CAPTURE(in, out, density);
      Linear fc("fc", dyadic_weights({out, in}, rng), dyadic_weights({out}, rng));
      auto kernel = cpu::make_kernel(fc, {{in}});
      const Tensor x = sparse_input({9, in}, density, rng);
      Tensor dense, events;
      run_path(*kernel, EventPolicy::Dense, x, dense);
      run_path(*kernel, EventPolicy::Events, x, events);
      REQUIRE(std::string(kernel->last_choice().path) == "events");
      REQUIRE(max_abs_diff(events, dense) == 0.0f);
    }
}

TEST_CASE("auto policy picks the event path on sparse input and the dense path on dense input", "[events]") {
  std::mt19937 rng(74);
  Conv2d conv("conv", Conv2dSpec{8, 8, 3, 3, 1, 1, 1, 1, 1}, dyadic_weights({8, 8, 3, 3}, rng));
  auto k = cpu::make_kernel(conv, {{8, 10, 10}});
  Tensor out;
  const Tensor sparse = sparse_input({4, 8, 10, 10}, 0.05, rng), dense = sparse_input({4, 8, 10, 10}, 0.9, rng);
  run_path(*k, EventPolicy::Auto, sparse, out);
  REQUIRE(std::string(k->last_choice().path) == "events");
  REQUIRE(k->last_choice().input_density == Approx(0.05).margin(0.03));
  run_path(*k, EventPolicy::Auto, dense, out);
  REQUIRE(std::string(k->last_choice().path) == "dense");
}

TEST_CASE("a whole network gives the same simulation on the dense path, the event path and auto", "[events]") {
  // small_cnn with dyadic weights and biases: every membrane sum is exact, so every spike must match.
  std::mt19937 rng(75);
  Network net = snn_test::small_cnn(rng, SourceActivation::ReLU, 0, false, true);
  for (int i = 0; i < net.size(); ++i) {
    auto round16 = [](Tensor& t) {
      for (auto& v : t.values()) v = std::round(v * 16.0f) / 16.0f;
    };
    if (auto* c = dynamic_cast<Conv2d*>(&net.layer(i))) {
      round16(c->weight());
      round16(c->bias());
    } else if (auto* l = dynamic_cast<Linear*>(&net.layer(i))) {
      round16(l->weight());
      round16(l->bias());
    }
  }
  Tensor images = snn_test::random_tensor({21, 2, 8, 8}, rng, 0.0f, 1.0f);
  for (auto& v : images.values()) v = std::round(v * 4.0f) / 4.0f;
  SimulationOptions o;
  o.timesteps = 12;
  o.max_chunk_steps = 5;
  std::vector<BatchSimulation> runs;
  for (EventPolicy p : {EventPolicy::Dense, EventPolicy::Events, EventPolicy::Auto}) {
    CpuBackend cpu(2);
    cpu.set_event_policy(p);
    runs.push_back(cpu.simulate(net, images, o));
  }
  int64_t spikes = 0;
  for (const auto& l : runs[0].spikes)
    for (double s : l) spikes += int64_t(s);
  REQUIRE(spikes > 100);  // the network is active, so the comparison means something
  for (size_t r = 1; r < runs.size(); ++r) {
    REQUIRE(runs[r].predictions == runs[0].predictions);
    REQUIRE(runs[r].spikes == runs[0].spikes);
    REQUIRE(runs[r].synaptic_ops == runs[0].synaptic_ops);
    // act2's thresholds (0.8, 1.2, ...) are not dyadic, so the readout's sums round by order.
    REQUIRE(max_abs_diff(runs[r].readout, runs[0].readout) < 1e-4f);
  }
  // The profile names each weight layer's path.
  REQUIRE(runs[1].profile.size() == size_t(net.size()));
  REQUIRE(runs[1].profile[size_t(net.find("fc"))].path == "events");
}

TEST_CASE("a large batch simulated in slices equals its images simulated one by one", "[events]") {
  // The CPU backend cuts a batch into cache-sized slices; images are independent, so the merged result
  // (predictions, readout, per-step spike and operation counts) must equal per-image runs added up.
  std::mt19937 rng(76);
  Network net = snn_test::small_cnn(rng);
  const Tensor images = snn_test::random_tensor({150, 2, 8, 8}, rng, 0.0f, 1.0f);
  SimulationOptions o;
  o.timesteps = 6;
  o.memory_budget = 1 << 16;  // small: many chunks and slices
  CpuBackend cpu(1);
  cpu.set_event_policy(EventPolicy::Dense);
  const BatchSimulation all = cpu.simulate(net, images, o);
  REQUIRE(all.batch == 150);
  std::vector<std::vector<double>> spikes(all.spikes.size(), std::vector<double>(6, 0.0));
  for (int64_t b = 0; b < 150; ++b) {
    const BatchSimulation one = cpu.simulate(net, images.slice0(b, 1), o);
    for (int64_t t = 0; t < 6; ++t) REQUIRE(one.predictions[size_t(t)] == all.predictions[size_t(t * 150 + b)]);
    for (int64_t k = 0; k < one.readout.numel(); ++k)
      REQUIRE(one.readout[k] == Approx(all.readout[b * one.readout.numel() + k]).margin(1e-5));
    for (size_t l = 0; l < spikes.size(); ++l)
      for (int64_t t = 0; t < 6; ++t) spikes[l][size_t(t)] += one.spikes[l][size_t(t)];
  }
  REQUIRE(spikes == all.spikes);
}

TEST_CASE("a residual add fused into its neuron layer gives the unfused simulation bit for bit", "[events]") {
  // Without a probe the CPU backend lets the neuron after a residual add sum the add's inputs itself;
  // with a probe (which may read that neuron's input) the add runs as its own layer. Same float sums,
  // so the same spikes and the same readout, exactly.
  struct ObserveNothing : NeuronProbe {
    bool observes(int) const override { return false; }
  };
  std::mt19937 rng(77);
  Network net = snn_test::small_cnn(rng, SourceActivation::ReLU, 0, false, true);
  const Tensor images = snn_test::random_tensor({32, 2, 8, 8}, rng, 0.0f, 1.0f);
  SimulationOptions o;
  o.timesteps = 10;
  o.max_chunk_steps = 4;
  CpuBackend cpu(2);
  cpu.set_event_policy(EventPolicy::Dense);
  const BatchSimulation fused = cpu.simulate(net, images, o);
  ObserveNothing probe;
  auto program = cpu.prepare(net);
  const BatchSimulation plain = cpu.simulate(*program, images, o, &probe);
  const size_t add = size_t(net.find("res.add"));
  REQUIRE(fused.profile[add].path == "fused");
  REQUIRE(plain.profile[add].path != "fused");
  const auto neurons = net.neuron_nodes();
  const size_t out_slot = size_t(std::find(neurons.begin(), neurons.end(), net.find("res.out")) - neurons.begin());
  REQUIRE(out_slot < fused.spikes.size());
  int64_t spikes = 0;
  for (double s : fused.spikes[out_slot]) spikes += int64_t(s);
  REQUIRE(spikes > 0);  // the fused neuron fires, so the comparison means something
  REQUIRE(fused.predictions == plain.predictions);
  REQUIRE(fused.spikes == plain.spikes);
  REQUIRE(max_abs_diff(fused.readout, plain.readout) == 0.0f);
}

TEST_CASE("max pooling fused into the neuron layer that feeds it gives the unfused simulation bit for bit",
          "[events]") {
  // Without a probe the CPU backend pools each plane of a neuron layer's spikes as the neuron makes it
  // (the spikes are never stored); with a probe both layers run on their own. The same running sums and
  // maxima, so the same spikes and readout exactly; also for signed neurons, and after a fused add.
  struct ObserveNothing : NeuronProbe {
    bool observes(int) const override { return false; }
  };
  for (bool residual : {false, true})
    for (bool signed_spikes : {false, true}) {
      INFO("residual " << residual << ", signed " << signed_spikes);
      std::mt19937 rng(78 + 2 * residual + signed_spikes);
      Network net = snn_test::small_cnn(rng, SourceActivation::ReLU, 0, /*maxpool=*/true, residual);
      if (signed_spikes) make_signed(net);
      const Tensor images = snn_test::random_tensor({24, 2, 8, 8}, rng, 0.0f, 1.0f);
      SimulationOptions o;
      o.timesteps = 9;
      o.max_chunk_steps = 4;  // the pool's running sums and the membranes carry across chunks
      CpuBackend cpu(2);
      auto program = cpu.prepare(net);
      const BatchSimulation fused = cpu.simulate(*program, images, o);
      ObserveNothing probe;
      const BatchSimulation plain = cpu.simulate(*program, images, o, &probe);
      const size_t pool = size_t(net.find("pool1"));
      REQUIRE(fused.profile[pool].path == "fused");
      REQUIRE(plain.profile[pool].path != "fused");
      double pooled_layer_spikes = 0;  // the neuron layer whose spikes are pooled, never stored
      for (double s : fused.spikes[residual ? 2 : 0]) pooled_layer_spikes += s;
      REQUIRE(pooled_layer_spikes > 0);
      REQUIRE(fused.predictions == plain.predictions);
      REQUIRE(fused.spikes == plain.spikes);
      REQUIRE(fused.synaptic_ops == plain.synaptic_ops);
      REQUIRE(max_abs_diff(fused.readout, plain.readout) == 0.0f);
    }
}

TEST_CASE("a program's kernel states are reset, not carried, from one batch to the next", "[events]") {
  // The CPU backend keeps membranes and pooling sums between simulate() calls of one program and resets
  // them in place: a batch must give the same result whatever ran before it on the program, for binary
  // and signed neurons (net spike counts), max pooling's running sums, in slices and whole.
  for (bool signed_spikes : {false, true}) {
    INFO("signed " << signed_spikes);
    std::mt19937 rng(90 + signed_spikes);
    Network net = snn_test::small_cnn(rng, SourceActivation::ReLU, 0, /*maxpool=*/true, /*residual=*/true);
    if (signed_spikes) make_signed(net);
    const Tensor a = snn_test::random_tensor({12, 2, 8, 8}, rng, 0.0f, 1.0f);
    const Tensor b = snn_test::random_tensor({12, 2, 8, 8}, rng, 0.5f, 1.0f);  // busier: other states
    for (int64_t budget : {int64_t(1) << 14, int64_t(1) << 30}) {  // slices of a few images; whole batch
      INFO("memory budget " << budget);
      SimulationOptions o;
      o.timesteps = 7;
      o.memory_budget = budget;
      CpuBackend cpu(2);
      const BatchSimulation fresh = cpu.simulate(net, a, o);  // a program of its own
      auto program = cpu.prepare(net);
      const BatchSimulation first = cpu.simulate(*program, a, o);
      cpu.simulate(*program, b, o);
      const BatchSimulation again = cpu.simulate(*program, a, o);
      REQUIRE(first.predictions == fresh.predictions);
      REQUIRE(again.predictions == fresh.predictions);
      REQUIRE(again.spikes == fresh.spikes);
      REQUIRE(max_abs_diff(again.readout, fresh.readout) == 0.0f);
    }
  }
}
