// ChannelGather, UpsampleNearest and ChannelAffine: the ANN view against naive loops, shape errors that
// name the layer, and the SNN view (spikes pass through gathers and upsampling unchanged, and the
// simulation plan treats them as events).
#include <catch2/catch.hpp>

#include "snn/cpu_backend.hpp"
#include "snn/simulation_plan.hpp"
#include "test_util.hpp"

using namespace snn;
using snn_test::random_tensor;

namespace {
// out[n][c] = plane source_channel[c] of input source_input[c], for inputs [N, C_i, plane...].
Tensor ref_gather(const std::vector<const Tensor*>& ins, const std::vector<int64_t>& src_in,
                  const std::vector<int64_t>& src_ch) {
  const int64_t N = ins[0]->dim(0), C = int64_t(src_in.size());
  const int64_t plane = ins[0]->numel() / (N * ins[0]->dim(1));
  Shape shape = ins[0]->shape();
  shape[1] = C;
  Tensor out(shape);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const Tensor& x = *ins[size_t(src_in[size_t(c)])];
      for (int64_t i = 0; i < plane; ++i)
        out[(n * C + c) * plane + i] = x[(n * x.dim(1) + src_ch[size_t(c)]) * plane + i];
    }
  return out;
}

Tensor run(const Layer& layer, const std::vector<const Tensor*>& ins) {
  Tensor y;
  snn_test::ann(layer, ins, y);
  return y;
}
}  // namespace

TEST_CASE("ChannelGather: concat, slices, shuffles and gathers match a naive copy", "[layers][gather]") {
  std::mt19937 rng(40);
  SECTION("concat of three inputs") {
    Tensor a = random_tensor({2, 2, 3, 4}, rng), b = random_tensor({2, 3, 3, 4}, rng),
           c = random_tensor({2, 1, 3, 4}, rng);
    const ChannelGather g = ChannelGather::concat("cat", {2, 3, 1});
    REQUIRE(g.arity() == 3);
    REQUIRE(g.output_shape({{2, 3, 4}, {3, 3, 4}, {1, 3, 4}}) == Shape{6, 3, 4});
    const Tensor y = run(g, {&a, &b, &c});
    REQUIRE(y.shape() == Shape{2, 6, 3, 4});
    // torch.cat order: a's channels, then b's, then c's, per image.
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 12; ++i) {
        REQUIRE(y[(n * 6 + 0) * 12 + i] == a[(n * 2 + 0) * 12 + i]);
        REQUIRE(y[(n * 6 + 1) * 12 + i] == a[(n * 2 + 1) * 12 + i]);
        REQUIRE(y[(n * 6 + 2) * 12 + i] == b[(n * 3 + 0) * 12 + i]);
        REQUIRE(y[(n * 6 + 4) * 12 + i] == b[(n * 3 + 2) * 12 + i]);
        REQUIRE(y[(n * 6 + 5) * 12 + i] == c[n * 12 + i]);
      }
    REQUIRE(g.summary() == "concat of 3 inputs (2+3+1 channels)");
  }
  SECTION("a slice (torch.chunk) of one input") {
    Tensor x = random_tensor({3, 6, 2, 5}, rng);
    ChannelGather g("chunk1", 1, {0, 0, 0}, {3, 4, 5});
    const Tensor y = run(g, {&x});
    REQUIRE(y.shape() == Shape{3, 3, 2, 5});
    REQUIRE(y.values() == ref_gather({&x}, g.source_input(), g.source_channel()).values());
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 3 * 10; ++i) REQUIRE(y[n * 30 + i] == x[n * 60 + 30 + i]);
    REQUIRE(g.summary() == "channels 3..5");
  }
  SECTION("a channel shuffle (groups 2 of 6 channels)") {
    Tensor x = random_tensor({2, 6, 3, 3}, rng);
    std::vector<int64_t> ch;
    for (int64_t c = 0; c < 6; ++c) ch.push_back((c % 2) * 3 + c / 2);  // view(2,3).transpose.flatten
    ChannelGather g("shuffle", 1, std::vector<int64_t>(6, 0), ch);
    const Tensor y = run(g, {&x});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 6; ++c)
        for (int64_t i = 0; i < 9; ++i) REQUIRE(y[(n * 6 + c) * 9 + i] == x[(n * 6 + ch[size_t(c)]) * 9 + i]);
    REQUIRE(g.summary() == "permutation of 6 channels");
  }
  SECTION("any gather of several inputs, channels repeated") {
    Tensor a = random_tensor({4, 3, 2, 2}, rng), b = random_tensor({4, 5, 2, 2}, rng);
    const std::vector<int64_t> in = {1, 0, 1, 1, 0, 0, 1}, ch = {4, 2, 0, 4, 0, 0, 3};
    ChannelGather g("mix", 2, in, ch);
    const Tensor y = run(g, {&a, &b});
    REQUIRE(y.shape() == Shape{4, 7, 2, 2});
    REQUIRE(y.values() == ref_gather({&a, &b}, in, ch).values());
    REQUIRE(g.summary() == "gather of 7 channels from 2 inputs");
  }
  SECTION("vector inputs") {
    Tensor a = random_tensor({3, 4}, rng), b = random_tensor({3, 2}, rng);
    const ChannelGather cat = ChannelGather::concat("vcat", {4, 2});
    REQUIRE(cat.output_shape({{4}, {2}}) == Shape{6});
    const Tensor y = run(cat, {&a, &b});
    REQUIRE(y.shape() == Shape{3, 6});
    for (int64_t n = 0; n < 3; ++n) {
      for (int64_t f = 0; f < 4; ++f) REQUIRE(y[n * 6 + f] == a[n * 4 + f]);
      for (int64_t f = 0; f < 2; ++f) REQUIRE(y[n * 6 + 4 + f] == b[n * 2 + f]);
    }
    ChannelGather perm("vperm", 1, {0, 0, 0, 0}, {3, 1, 0, 2});
    const Tensor z = run(perm, {&a});
    REQUIRE(z.values() == ref_gather({&a}, perm.source_input(), perm.source_channel()).values());
  }
  SECTION("the SNN view of a chunk is a bigger batch: spikes move, unchanged") {
    std::bernoulli_distribution fire(0.4);
    Tensor a({5 * 2, 3, 2, 2}), b({5 * 2, 2, 2, 2});
    for (auto& v : a.values()) v = fire(rng) ? 0.5f : 0.0f;
    for (auto& v : b.values()) v = fire(rng) ? 0.5f : 0.0f;
    ChannelGather g("g", 2, {1, 0, 0, 1}, {1, 2, 0, 0});
    snn_test::CpuRun k(g, {{3, 2, 2}, {2, 2, 2}}, 2);
    Tensor y;
    k.snn({&a, &b}, y, StepChunk{0, 5, 2});
    REQUIRE(y.values() == ref_gather({&a, &b}, g.source_input(), g.source_channel()).values());
  }
}

TEST_CASE("ChannelGather: errors name the layer", "[layers][gather]") {
  REQUIRE_THROWS_WITH(ChannelGather("g_in", 2, {0, 2}, {0, 0}), Catch::Contains("g_in") && Catch::Contains("input 2"));
  REQUIRE_THROWS_WITH(ChannelGather("g_len", 1, {0, 0}, {0}), Catch::Contains("g_len"));
  REQUIRE_THROWS_WITH(ChannelGather("g_empty", 1, {}, {}),
                      Catch::Contains("g_empty") && Catch::Contains("no channels"));
  REQUIRE_THROWS_WITH(ChannelGather("g_neg", 1, {0}, {-1}), Catch::Contains("g_neg"));
  REQUIRE_THROWS_WITH(ChannelGather("g_none", 0, {0}, {0}), Catch::Contains("g_none"));
  ChannelGather g("g", 2, {0, 1}, {1, 3});
  REQUIRE_THROWS_WITH(g.output_shape({{2, 4, 4}, {3, 4, 4}}),
                      Catch::Contains("'g'") && Catch::Contains("channel 3") && Catch::Contains("3 channels"));
  REQUIRE_THROWS_WITH(g.output_shape({{2, 4, 4}, {4, 4, 5}}),
                      Catch::Contains("'g'") && Catch::Contains("height or width"));
  REQUIRE_THROWS_WITH(g.output_shape({{2, 4, 4}, {4}}), Catch::Contains("'g'") && Catch::Contains("mix ranks"));
  REQUIRE_THROWS_WITH(g.output_shape({{2, 4, 4}}), Catch::Contains("'g'") && Catch::Contains("expects 2 inputs"));
  REQUIRE_THROWS_WITH(g.output_shape({{2, 0, 4}, {4, 0, 4}}), Catch::Contains("'g'") && Catch::Contains("empty"));
  REQUIRE_THROWS_WITH(g.output_shape({{2, 4}, {4, 4}}), Catch::Contains("'g'") && Catch::Contains("[C, H, W] or [F]"));
  // In a network: the wrong number of inputs is refused naming the layer.
  Network net({3, 4, 4});
  REQUIRE_THROWS_WITH(net.add(std::make_unique<ChannelGather>(ChannelGather::concat("cat", {3, 3}))),
                      Catch::Contains("cat") && Catch::Contains("takes 2 inputs"));
}

namespace {
// Independent integer facts: upsampling by an integer factor k repeats each row k times; downsampling
// by k reads every k-th row (nearest) or the middle one (nearest-exact: floor((y + 0.5)·k)).
std::vector<int64_t> ref_rows(int64_t in, int64_t out, bool exact) {
  std::vector<int64_t> r;
  for (int64_t y = 0; y < out; ++y) {
    if (out >= in)
      r.push_back(y / (out / in));
    else
      r.push_back(exact ? y * (in / out) + (in / out) / 2 : y * (in / out));
  }
  return r;
}
}  // namespace

TEST_CASE("UpsampleNearest: index tables and the copy", "[layers][upsample]") {
  std::mt19937 rng(41);
  SECTION("integer factors, up and down, both modes") {
    for (bool exact : {false, true})
      for (auto [in, out] :
           std::vector<std::pair<int64_t, int64_t>>{{4, 8}, {3, 9}, {5, 20}, {8, 4}, {9, 3}, {12, 3}, {6, 6}}) {
        INFO("exact " << exact << ", " << in << " -> " << out);
        UpsampleSpec s{out, out, float(in) / float(out), float(in) / float(out), exact};
        UpsampleNearest up("up", s);
        REQUIRE(up.source_rows(in) == ref_rows(in, out, exact));
        REQUIRE(up.source_cols(in) == ref_rows(in, out, exact));
      }
  }
  SECTION("non-integer ratios follow the float formula, clamped to the input (nearest: but for out = in, 2·in)") {
    for (bool exact : {false, true})
      for (auto [in, out, scale] : std::vector<std::tuple<int64_t, int64_t, float>>{{5, 12, 5.0f / 12.0f},
                                                                                    {4, 7, 4.0f / 7.0f},
                                                                                    {7, 3, 7.0f / 3.0f},
                                                                                    {5, 7, float(1.0 / 1.5)},
                                                                                    {13, 26, float(1.0 / 2.05)},
                                                                                    {20, 20, float(1.0 / 1.04)},
                                                                                    {3, 5, 0.9f}}) {
        INFO("exact " << exact << ", " << in << " -> " << out << " scale " << scale);
        UpsampleNearest up("up", UpsampleSpec{out, 2, scale, 1.0f, exact});
        const std::vector<int64_t> rows = up.source_rows(in);
        REQUIRE(int64_t(rows.size()) == out);
        for (int64_t y = 0; y < out; ++y) {
          const double pos = exact ? (double(y) + 0.5) * double(scale) : double(y) * double(scale);
          // The exact product of two floats, floored, agrees with the float formula unless it sits within
          // a float rounding of an integer; none of these cases does. Except: "nearest" with out = 2·in
          // (13 -> 26) or out = in (20 -> 20) takes PyTorch's nearest_idx shortcuts (y / 2, y) whatever the
          // scale, as torch 2.x does; nearest-exact never does.
          const int64_t want = !exact && out == 2 * in ? y / 2
                               : !exact && out == in   ? y
                                                       : std::min<int64_t>(int64_t(std::floor(pos)), in - 1);
          REQUIRE(rows[size_t(y)] == want);
          REQUIRE(rows[size_t(y)] >= 0);
        }
      }
  }
  SECTION("the kernel copies through the tables") {
    UpsampleNearest up("up", UpsampleSpec{7, 9, 5.0f / 7.0f, 4.0f / 9.0f, true});
    Tensor x = random_tensor({2, 3, 5, 4}, rng);
    const Tensor y = run(up, {&x});
    REQUIRE(y.shape() == Shape{2, 3, 7, 9});
    const auto rows = up.source_rows(5), cols = up.source_cols(4);
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t oy = 0; oy < 7; ++oy)
        for (int64_t ox = 0; ox < 9; ++ox)
          REQUIRE(y[(p * 7 + oy) * 9 + ox] == x[(p * 5 + rows[size_t(oy)]) * 4 + cols[size_t(ox)]]);
  }
  SECTION("errors and summary") {
    REQUIRE_THROWS_WITH(UpsampleNearest("u0", UpsampleSpec{0, 4, 1.0f, 1.0f, false}), Catch::Contains("u0"));
    REQUIRE_THROWS_WITH(UpsampleNearest("u1", UpsampleSpec{4, 4, 0.0f, 1.0f, false}), Catch::Contains("u1"));
    UpsampleNearest up("u2", UpsampleSpec{8, 8, 0.5f, 0.5f, false});
    REQUIRE_THROWS_WITH(up.output_shape({{16}}), Catch::Contains("u2") && Catch::Contains("[C, H, W]"));
    REQUIRE(up.output_shape({{3, 4, 4}}) == Shape{3, 8, 8});
    REQUIRE(up.summary().find("8x8") != std::string::npos);
    REQUIRE(up.preserves_events());
    REQUIRE_FALSE(up.stateful());
  }
}

TEST_CASE("ChannelAffine: x·scale[c] + shift[c], and from batch norm", "[layers][affine]") {
  std::mt19937 rng(42);
  Tensor scale = random_tensor({3}, rng, -2, 2), shift = random_tensor({3}, rng);
  ChannelAffine aff("bn", scale, shift);
  Tensor x = random_tensor({2, 3, 4, 5}, rng);
  const Tensor y = run(aff, {&x});
  REQUIRE(y.shape() == x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 20) % 3;
    REQUIRE(y[i] == x[i] * scale[c] + shift[c]);  // two roundings: the build never contracts to an FMA
  }
  REQUIRE(aff.macs({{3, 4, 5}}) == 60);
  REQUIRE(aff.parameter_count() == 6);
  Tensor v = random_tensor({4, 3}, rng);
  const Tensor yv = run(aff, {&v});
  for (int64_t i = 0; i < v.numel(); ++i) REQUIRE(yv[i] == v[i] * scale[i % 3] + shift[i % 3]);

  const std::vector<float> mean = {0.5f, -1.0f, 2.0f}, var = {0.25f, 4.0f, 0.1f}, gamma = {1.5f, 0.5f, -1.0f},
                           beta = {0.1f, 0.0f, 0.3f};
  const ChannelAffine bn = ChannelAffine::from_batch_norm("bn2", mean, var, gamma, beta, 1e-5);
  for (size_t c = 0; c < 3; ++c) {
    const double s = double(gamma[c]) / std::sqrt(double(var[c]) + 1e-5);
    REQUIRE(bn.scale()[int64_t(c)] == float(s));
    REQUIRE(bn.shift()[int64_t(c)] == float(double(beta[c]) - double(mean[c]) * s));
  }
  const ChannelAffine plain = ChannelAffine::from_batch_norm("bn3", mean, var, {}, {}, 1e-5);
  REQUIRE(plain.scale()[1] == float(1.0 / std::sqrt(4.0 + 1e-5)));

  REQUIRE_THROWS_WITH(aff.output_shape({{4, 2, 2}}), Catch::Contains("'bn'") && Catch::Contains("4 channels"));
  REQUIRE_THROWS_WITH(ChannelAffine("bad", Tensor({3}), Tensor({2})), Catch::Contains("bad"));
  REQUIRE_THROWS_WITH(ChannelAffine::from_batch_norm("bad2", mean, {1.0f}, {}, {}, 1e-5), Catch::Contains("bad2"));
  REQUIRE_FALSE(aff.preserves_events());  // the shift is a constant current: not a spike train
}

namespace {
// Two IF layers on the same input, gathered (concat + shuffle), upsampled 2x, flattened and read out
// through an identity matrix: the readout after T steps is then the gathered, upsampled spike counts.
Network gather_net(std::mt19937& rng, bool with_gather) {
  Network net({2, 4, 4});
  Conv2dSpec c1{2, 3, 3, 3, 1, 1, 1, 1, 1}, c2{2, 2, 3, 3, 1, 1, 1, 1, 1};
  const Tensor w1 = random_tensor({3, 2, 3, 3}, rng, -0.5f, 0.8f), w2 = random_tensor({2, 2, 3, 3}, rng, -0.5f, 0.8f);
  const int a = net.add(std::make_unique<Conv2d>("conv1", c1, w1), {Network::kInput});
  const int if1 = net.add(std::make_unique<NeuronLayer>("if1", 3, std::vector<float>{1.0f}), {a});
  const int b = net.add(std::make_unique<Conv2d>("conv2", c2, w2), {Network::kInput});
  const int if2 = net.add(std::make_unique<NeuronLayer>("if2", 2, std::vector<float>{1.0f}), {b});
  if (with_gather) {
    net.add(std::make_unique<ChannelGather>("mix", 2, std::vector<int64_t>{1, 0, 0, 1, 0},
                                            std::vector<int64_t>{1, 2, 0, 0, 1}),
            {if1, if2});
    net.add(std::make_unique<UpsampleNearest>("up", UpsampleSpec{8, 8, 0.5f, 0.5f, false}));
    net.add(std::make_unique<Flatten>("flat"));
    Tensor eye({5 * 64, 5 * 64}, 0.0f);
    for (int64_t i = 0; i < 5 * 64; ++i) eye[i * 5 * 64 + i] = 1.0f;
    net.add(std::make_unique<Linear>("fc", eye));
  } else {
    // Both spike maps side by side through the identity: concat of the flattened maps, read out.
    const int f1 = net.add(std::make_unique<Flatten>("f1"), {if1});
    const int f2 = net.add(std::make_unique<Flatten>("f2"), {if2});
    net.add(std::make_unique<ChannelGather>(ChannelGather::concat("vcat", {48, 32})), {f1, f2});
    Tensor eye({80, 80}, 0.0f);
    for (int64_t i = 0; i < 80; ++i) eye[i * 80 + i] = 1.0f;
    net.add(std::make_unique<Linear>("fc", eye));
  }
  return net;
}
}  // namespace

TEST_CASE("SNN view: spikes pass through gather and upsampling unchanged, as events", "[layers][engine]") {
  std::mt19937 rng(43);
  std::mt19937 rng_a(7), rng_b(7);  // the same conv weights in both networks
  const Network with = gather_net(rng_a, true), counts = gather_net(rng_b, false);
  const Tensor x = random_tensor({3, 2, 4, 4}, rng, 0.0f, 1.0f);
  SimulationOptions o;
  o.timesteps = 9;
  o.max_chunk_steps = 4;  // chunks carry the neurons' state; gather and upsample are stateless
  CpuBackend cpu(2);
  const BatchSimulation sw = cpu.simulate(with, x, o), sc = cpu.simulate(counts, x, o);
  // sc.readout [3, 80]: spike counts of if1 (48) then if2 (32), per image. Integers: exact sums.
  double total = 0;
  for (int64_t i = 0; i < sc.readout.numel(); ++i) total += sc.readout[i];
  REQUIRE(total > 20);  // spikes flowed
  const std::vector<int64_t> src_in = {1, 0, 0, 1, 0}, src_ch = {1, 2, 0, 0, 1};
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t oy = 0; oy < 8; ++oy)
        for (int64_t ox = 0; ox < 8; ++ox) {
          const int64_t from = (src_in[size_t(c)] == 0 ? 0 : 48) + src_ch[size_t(c)] * 16 + (oy / 2) * 4 + ox / 2;
          REQUIRE(sw.readout[b * 320 + (c * 8 + oy) * 8 + ox] == sc.readout[b * 80 + from]);
        }
  // The plan: gathered and upsampled spikes are events; the readout accumulates them.
  const SimulationPlan plan = make_simulation_plan(with, o, 3);
  const int mix = with.find("mix"), up = with.find("up"), fc = with.find("fc");
  REQUIRE(plan.events[size_t(mix)]);
  REQUIRE(plan.events[size_t(up)]);
  REQUIRE_FALSE(plan.is_static[size_t(mix)]);
  REQUIRE(plan.counts_events[size_t(fc)]);
  // An affine layer after spikes is not an event stream (its shift is a constant current).
  Network net2({2, 4, 4});
  net2.add(std::make_unique<Conv2d>("conv", Conv2dSpec{2, 3, 3, 3, 1, 1, 1, 1, 1}, random_tensor({3, 2, 3, 3}, rng)));
  net2.add(std::make_unique<NeuronLayer>("if", 3, std::vector<float>{1.0f}));
  const int a = net2.add(std::make_unique<ChannelAffine>("bn", Tensor({3}, 0.5f), Tensor({3}, 0.1f)));
  net2.add(std::make_unique<Flatten>("flat"));
  net2.add(std::make_unique<Linear>("fc", random_tensor({4, 48}, rng)));
  const SimulationPlan p2 = make_simulation_plan(net2, o, 3);
  REQUIRE_FALSE(p2.events[size_t(a)]);
}
