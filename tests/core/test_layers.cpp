// Every layer's ANN-view forward against a naive loop implementation, on random shapes.
#include <catch2/catch.hpp>
#include <limits>

#include "test_util.hpp"

using namespace snn;
using snn_test::random_tensor;

namespace {
float naive_conv_at(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dSpec& s, int64_t n, int64_t o,
                    int64_t oy, int64_t ox) {
  const int64_t H = x.dim(2), W = x.dim(3), cin_g = s.in_channels / s.groups, cout_g = s.out_channels / s.groups;
  const int64_t g = o / cout_g;
  double acc = b.empty() ? 0.0 : b[o];
  for (int64_t ci = 0; ci < cin_g; ++ci)
    for (int64_t ky = 0; ky < s.kernel_h; ++ky)
      for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
        const int64_t iy = oy * s.stride_h - s.pad_h + ky, ix = ox * s.stride_w - s.pad_w + kx;
        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
        const int64_t c = g * cin_g + ci;
        acc += double(x[((n * x.dim(1) + c) * H + iy) * W + ix]) *
               double(w[((o * cin_g + ci) * s.kernel_h + ky) * s.kernel_w + kx]);
      }
  return float(acc);
}
}  // namespace

TEST_CASE("Conv2d matches a naive convolution (stride, padding, groups, bias)", "[layers]") {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 24; ++trial) {
    std::uniform_int_distribution<int> pick(0, 1000);
    const int64_t groups = std::vector<int64_t>{1, 2, 3}[size_t(pick(rng) % 3)];
    Conv2dSpec s;
    s.groups = groups;
    s.in_channels = groups * (1 + pick(rng) % 3);
    s.out_channels = groups * (1 + pick(rng) % 3);
    s.kernel_h = 1 + pick(rng) % 3;
    s.kernel_w = 1 + pick(rng) % 3;
    s.stride_h = 1 + pick(rng) % 2;
    s.stride_w = 1 + pick(rng) % 3;
    s.pad_h = pick(rng) % 2;
    s.pad_w = pick(rng) % 3;
    const int64_t H = 4 + pick(rng) % 6, W = 3 + pick(rng) % 7, N = 1 + pick(rng) % 3;
    const bool bias = trial % 2 == 0;
    Tensor w = random_tensor({s.out_channels, s.in_channels / groups, s.kernel_h, s.kernel_w}, rng);
    Tensor b = bias ? random_tensor({s.out_channels}, rng) : Tensor();
    Conv2d conv("conv", s, w, b);
    Tensor x = random_tensor({N, s.in_channels, H, W}, rng), y;
    snn_test::ann(conv, {&x}, y);
    const Shape os = conv.output_shape({{s.in_channels, H, W}});
    REQUIRE(y.shape() == Shape{N, os[0], os[1], os[2]});
    float worst = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < os[0]; ++o)
        for (int64_t oy = 0; oy < os[1]; ++oy)
          for (int64_t ox = 0; ox < os[2]; ++ox)
            worst = std::max(worst, std::fabs(y[((n * os[0] + o) * os[1] + oy) * os[2] + ox] -
                                              naive_conv_at(x, w, b, s, n, o, oy, ox)));
    INFO("trial " << trial << " groups " << groups << " k " << s.kernel_h << "x" << s.kernel_w);
    REQUIRE(worst < 1e-5f);
    REQUIRE(conv.macs({{s.in_channels, H, W}}) ==
            os[0] * os[1] * os[2] * (s.in_channels / groups) * s.kernel_h * s.kernel_w);
  }
}

TEST_CASE("Linear matches a naive matrix product", "[layers]") {
  std::mt19937 rng(2);
  Tensor w = random_tensor({5, 7}, rng), b = random_tensor({5}, rng), x = random_tensor({3, 7}, rng), y;
  Linear fc("fc", w, b);
  snn_test::ann(fc, {&x}, y);
  REQUIRE(y.shape() == Shape{3, 5});
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t o = 0; o < 5; ++o) {
      double acc = b[o];
      for (int64_t i = 0; i < 7; ++i) acc += double(x[n * 7 + i]) * double(w[o * 7 + i]);
      REQUIRE(y[n * 5 + o] == Approx(acc).margin(1e-5));
    }
  // A [N, C, H, W] input is read as flattened.
  Tensor x4 = x.reshaped({3, 7, 1, 1}), y4;
  snn_test::ann(fc, {&x4}, y4);
  REQUIRE(max_abs_diff(y4, y) == 0.0f);
}

TEST_CASE("AvgPool2d and MaxPool2d match naive pooling", "[layers]") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 12; ++trial) {
    PoolSpec s;
    s.kernel_h = 2 + trial % 2;
    s.kernel_w = 2 + (trial / 2) % 2;
    s.stride_h = 1 + trial % 3;
    s.stride_w = 1 + (trial / 3) % 2;
    s.pad_h = trial % 2;
    s.pad_w = (trial / 4) % 2;
    const int64_t H = 5 + trial % 4, W = 6, C = 2, N = 2;
    Tensor x = random_tensor({N, C, H, W}, rng), ya, ym;
    AvgPool2d avg("avg", s);
    MaxPool2d mx("max", s);
    snn_test::ann(avg, {&x}, ya);
    snn_test::ann(mx, {&x}, ym);
    const Shape os = avg.output_shape({{C, H, W}});
    REQUIRE(ya.shape() == Shape{N, C, os[1], os[2]});
    for (int64_t p = 0; p < N * C; ++p)
      for (int64_t oy = 0; oy < os[1]; ++oy)
        for (int64_t ox = 0; ox < os[2]; ++ox) {
          double sum = 0;
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t ky = 0; ky < s.kernel_h; ++ky)
            for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
              const int64_t iy = oy * s.stride_h - s.pad_h + ky, ix = ox * s.stride_w - s.pad_w + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              sum += x[(p * H + iy) * W + ix];
              m = std::max(m, x[(p * H + iy) * W + ix]);
            }
          const int64_t o = (p * os[1] + oy) * os[2] + ox;
          REQUIRE(ya[o] == Approx(sum / double(s.kernel_h * s.kernel_w)).margin(1e-6));
          REQUIRE(ym[o] == m);
        }
  }
}

TEST_CASE("Flatten, Add and neuron layers in the ANN view", "[layers]") {
  std::mt19937 rng(4);
  Tensor a = random_tensor({2, 3, 2, 2}, rng), b = random_tensor({2, 3, 2, 2}, rng), y;
  Add add("add");
  snn_test::ann(add, {&a, &b}, y);
  for (int64_t i = 0; i < a.numel(); ++i) REQUIRE(y[i] == a[i] + b[i]);
  Flatten f("flat");
  snn_test::ann(f, {&a}, y);
  REQUIRE(y.shape() == Shape{2, 12});
  REQUIRE(y.values() == a.values());
  NeuronLayer n("act", 3, {0.5f, 1.0f, 2.0f}, SourceActivation::Clip);
  snn_test::ann(n, {&a}, y);
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int64_t c = (i / 4) % 3;
    REQUIRE(y[i] == std::min(std::max(a[i], 0.0f), std::vector<float>{0.5f, 1.0f, 2.0f}[size_t(c)]));
  }
  REQUIRE_THROWS_WITH(add.output_shape({{3, 2, 2}, {3, 2, 1}}), Catch::Contains("add") && Catch::Contains("differ"));
}

TEST_CASE("spiking max pooling: output count = the largest input count, at every step", "[layers]") {
  MaxPool2d mx("pool", PoolSpec{2, 1, 2, 1, 0, 0});  // windows of 2 rows x 1 column
  SECTION("a clear leader") {
    snn_test::CpuRun k(mx, {{1, 2, 1}}, 1);
    // Element A spikes at t = 0, 1, 2; element B at t = 0 and 3. Max over spikes would fire 4 times;
    // the max rate is A's 3 of 4.
    Tensor x({4, 1, 2, 1}, {1, 1, 1, 0, 1, 0, 0, 1}), y;
    k.snn({&x}, y, StepChunk{0, 4, 1});
    REQUIRE(y.values() == std::vector<float>{1, 1, 1, 0});
  }
  SECTION("alternating leaders: no surplus spikes at ties") {
    snn_test::CpuRun k(mx, {{1, 2, 1}}, 1);
    // A: 1 0 0 1, B: 0 1 1 0. Counts A 1 1 1 2, B 0 1 2 2: the largest count is 1 1 2 2, so the output
    // spikes at t = 0 and t = 2 only. (Gating by the current leader would also pass A's spike at t = 3.)
    Tensor x({4, 1, 2, 1}, {1, 0, 0, 1, 0, 1, 1, 0}), y;
    k.snn({&x}, y, StepChunk{0, 4, 1});
    REQUIRE(y.values() == std::vector<float>{1, 0, 1, 0});
  }
  SECTION("random spike trains, chunked: the running sums agree exactly") {
    std::mt19937 rng(6);
    std::bernoulli_distribution fire(0.3);
    MaxPool2d pool("pool", PoolSpec{2, 2, 2, 2, 0, 0});
    const int64_t T = 12, B = 2;
    Tensor x({T * B, 3, 4, 4});
    for (int64_t i = 0; i < x.numel(); ++i) x[i] = fire(rng) ? 0.5f : 0.0f;
    snn_test::CpuRun k(pool, {{3, 4, 4}}, B);
    std::vector<float> out_sum(size_t(B * 3 * 2 * 2), 0.0f), in_sum(size_t(B * 3 * 4 * 4), 0.0f);
    for (int64_t t0 = 0; t0 < T; t0 += 5) {
      const int64_t steps = std::min<int64_t>(5, T - t0);
      Tensor chunk = x.slice0(t0 * B, steps * B), y;
      k.snn({&chunk}, y, StepChunk{t0, steps, B});
      for (int64_t t = 0; t < steps; ++t) {
        for (int64_t i = 0; i < B * 48; ++i) in_sum[size_t(i)] += chunk[t * B * 48 + i];
        for (int64_t i = 0; i < B * 12; ++i) {
          REQUIRE((y[t * B * 12 + i] == 0.0f || y[t * B * 12 + i] == 0.5f));  // still a spike train
          out_sum[size_t(i)] += y[t * B * 12 + i];
        }
        Tensor sums({B, 3, 4, 4}, in_sum), pooled;
        snn_test::ann(pool, {&sums}, pooled);  // ANN max pooling of the running sums
        for (int64_t i = 0; i < B * 12; ++i) REQUIRE(out_sum[size_t(i)] == pooled[i]);
      }
    }
  }
}

TEST_CASE("shape errors name the layer", "[layers]") {
  std::mt19937 rng(5);
  Network net({3, 8, 8});
  Conv2dSpec s{4, 4, 3, 3, 1, 1, 0, 0, 1};
  REQUIRE_THROWS_WITH(net.add(std::make_unique<Conv2d>("conv_a", s, random_tensor({4, 4, 3, 3}, rng))),
                      Catch::Contains("conv_a") && Catch::Contains("channels"));
  REQUIRE_THROWS_WITH(Conv2d("conv_b", Conv2dSpec{3, 4, 3, 3, 1, 1, 0, 0, 1}, random_tensor({4, 3, 2, 3}, rng)),
                      Catch::Contains("conv_b") && Catch::Contains("weight shape"));
  net.add(std::make_unique<Flatten>("flat"));
  REQUIRE_THROWS_WITH(net.add(std::make_unique<Linear>("fc", random_tensor({10, 100}, rng))),
                      Catch::Contains("fc") && Catch::Contains("192"));
}
