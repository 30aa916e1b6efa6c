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

namespace {
// PyTorch's documented output size (dilation 1), written out independently of the layer.
int64_t ref_pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  const int64_t span = in + 2 * p - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;  // the last window must start inside input or left padding
  return out;
}

struct PoolRef {
  std::vector<double> avg;
  std::vector<float> max;
};

// Naive pooling over [P, H, W] planes: visit every kernel tap; taps inside the padded input count in the
// divisor when count_include_pad, taps inside the input are summed and counted otherwise.
PoolRef ref_pool(const Tensor& x, int64_t P, int64_t H, int64_t W, const PoolSpec& s) {
  const int64_t ho = ref_pooled_size(H, s.kernel_h, s.stride_h, s.pad_h, s.ceil_mode);
  const int64_t wo = ref_pooled_size(W, s.kernel_w, s.stride_w, s.pad_w, s.ceil_mode);
  PoolRef r;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox) {
        double sum = 0;
        int64_t padded = 0, inside = 0;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t ky = 0; ky < s.kernel_h; ++ky)
          for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
            const int64_t iy = oy * s.stride_h - s.pad_h + ky, ix = ox * s.stride_w - s.pad_w + kx;
            if (iy < -s.pad_h || iy >= H + s.pad_h || ix < -s.pad_w || ix >= W + s.pad_w) continue;
            ++padded;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            ++inside;
            sum += x[(p * H + iy) * W + ix];
            m = std::max(m, x[(p * H + iy) * W + ix]);
          }
        r.avg.push_back(sum / double(s.count_include_pad ? padded : inside));
        r.max.push_back(m);
      }
  return r;
}
}  // namespace

TEST_CASE("pooling with ceil_mode and count_include_pad matches naive pooling", "[layers]") {
  std::mt19937 rng(30);
  int checked_partial = 0;
  for (int trial = 0; trial < 64; ++trial) {
    PoolSpec s;
    s.kernel_h = 2 + trial % 2;
    s.kernel_w = 2 + (trial / 2) % 3;
    s.stride_h = 1 + (trial / 3) % 3;
    s.stride_w = 2 + (trial / 5) % 2;
    s.pad_h = (trial / 7) % 2;
    s.pad_w = (trial / 11) % 2;
    s.ceil_mode = trial % 4 != 3;
    s.count_include_pad = (trial / 2) % 2 == 0;
    const int64_t H = 4 + trial % 5, W = 5 + (trial / 3) % 4, C = 2, N = 2;
    INFO("trial " << trial << " k " << s.kernel_h << "x" << s.kernel_w << " s " << s.stride_h << "," << s.stride_w
                  << " p " << s.pad_h << "," << s.pad_w << " ceil " << s.ceil_mode << " cip " << s.count_include_pad
                  << " in " << H << "x" << W);
    AvgPool2d avg("avg", s);
    MaxPool2d mx("max", s);
    const Shape os = avg.output_shape({{C, H, W}});
    REQUIRE(os == Shape{C, ref_pooled_size(H, s.kernel_h, s.stride_h, s.pad_h, s.ceil_mode),
                        ref_pooled_size(W, s.kernel_w, s.stride_w, s.pad_w, s.ceil_mode)});
    REQUIRE(mx.output_shape({{C, H, W}}) == os);
    const PoolGeometry g = avg.geometry(H, W);
    REQUIRE((g.out_h == os[1] && g.out_w == os[2]));
    if (s.ceil_mode && (os[1] != ref_pooled_size(H, s.kernel_h, s.stride_h, s.pad_h, false) ||
                        os[2] != ref_pooled_size(W, s.kernel_w, s.stride_w, s.pad_w, false)))
      ++checked_partial;
    Tensor x = random_tensor({N, C, H, W}, rng), ya, ym;
    snn_test::ann(avg, {&x}, ya);
    snn_test::ann(mx, {&x}, ym);
    REQUIRE(ya.shape() == Shape{N, C, os[1], os[2]});
    REQUIRE(ym.shape() == ya.shape());
    const PoolRef ref = ref_pool(x, N * C, H, W, s);
    for (int64_t i = 0; i < ya.numel(); ++i) {
      REQUIRE(ya[i] == Approx(ref.avg[size_t(i)]).margin(2e-6));
      REQUIRE(ym[i] == ref.max[size_t(i)]);
    }
  }
  REQUIRE(checked_partial > 10);  // the cases exercise partial last windows
}

TEST_CASE("max pooling of wide planes matches naive pooling", "[layers]") {
  // Rows wide enough that the regular (unclipped) windows are taken as a vectorised strided copy, with
  // clipped borders on either side, in floor and ceil mode.
  std::mt19937 rng(32);
  for (int64_t W : {37, 112})
    for (int64_t stride : {1, 2, 3})
      for (bool ceil : {false, true}) {
        PoolSpec s{3, 3, stride, stride, 1, 1};
        s.ceil_mode = ceil;
        CAPTURE(W, stride, ceil);
        const int64_t H = 9;
        MaxPool2d mx("max", s);
        Tensor x = random_tensor({1, 2, H, W}, rng), y;
        snn_test::ann(mx, {&x}, y);
        const PoolRef ref = ref_pool(x, 2, H, W, s);
        REQUIRE(size_t(y.numel()) == ref.max.size());
        for (int64_t i = 0; i < y.numel(); ++i) REQUIRE(y[i] == ref.max[size_t(i)]);
      }
}

TEST_CASE("default pooling computes exactly what it did before ceil_mode existed", "[layers]") {
  // The floor-mode, count_include_pad kernel summed the in-bounds taps in row-major order in float and
  // divided by float(kernel area): models converted before must give the same bits.
  std::mt19937 rng(31);
  const PoolSpec specs[] = {{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 0}, {2, 2, 1, 1, 1, 1}};
  for (const PoolSpec& s : specs) {
    const int64_t H = 7, W = 9;
    Tensor x = random_tensor({2, 3, H, W}, rng), y;
    AvgPool2d avg("avg", s);
    snn_test::ann(avg, {&x}, y);
    const int64_t ho = (H + 2 * s.pad_h - s.kernel_h) / s.stride_h + 1;
    const int64_t wo = (W + 2 * s.pad_w - s.kernel_w) / s.stride_w + 1;
    REQUIRE(y.shape() == Shape{2, 3, ho, wo});
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          float acc = 0.0f;
          for (int64_t ky = 0; ky < s.kernel_h; ++ky)
            for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
              const int64_t iy = oy * s.stride_h - s.pad_h + ky, ix = ox * s.stride_w - s.pad_w + kx;
              if (iy >= 0 && iy < H && ix >= 0 && ix < W) acc += x[(p * H + iy) * W + ix];
            }
          REQUIRE(y[(p * ho + oy) * wo + ox] == acc / float(s.kernel_h * s.kernel_w));
        }
  }
}

TEST_CASE("adaptive average pooling matches naive uneven windows", "[layers]") {
  std::mt19937 rng(32);
  const std::vector<std::pair<Shape, Shape>> cases = {  // {H, W} -> {out_h, out_w}
      {{5, 5}, {3, 3}}, {{7, 7}, {3, 3}}, {{2, 2}, {7, 7}}, {{1, 1}, {6, 6}}, {{6, 6}, {6, 6}},
      {{10, 10}, {4, 4}}, {{5, 7}, {3, 2}}, {{9, 4}, {4, 6}}, {{7, 3}, {1, 1}},
      // windows that tile the plane evenly (the kernel takes them as fixed windows): global pooling too
      {{7, 7}, {1, 1}}, {{8, 6}, {4, 2}}, {{12, 12}, {3, 3}}, {{6, 9}, {2, 3}}};
  for (const auto& [in, out] : cases) {
    INFO(in[0] << "x" << in[1] << " -> " << out[0] << "x" << out[1]);
    const int64_t H = in[0], W = in[1], C = 3, N = 2;
    AdaptiveAvgPool2d layer("gap", out[0], out[1]);
    REQUIRE(layer.output_shape({{C, H, W}}) == Shape{C, out[0], out[1]});
    Tensor x = random_tensor({N, C, H, W}, rng), y;
    snn_test::ann(layer, {&x}, y);
    REQUIRE(y.shape() == Shape{N, C, out[0], out[1]});
    for (int64_t p = 0; p < N * C; ++p)
      for (int64_t oy = 0; oy < out[0]; ++oy)
        for (int64_t ox = 0; ox < out[1]; ++ox) {
          // Window [floor(o·in/out), ceil((o+1)·in/out)) per axis, in floating point.
          const int64_t y0 = int64_t(std::floor(double(oy) * H / out[0]));
          const int64_t y1 = int64_t(std::ceil(double(oy + 1) * H / out[0]));
          const int64_t x0 = int64_t(std::floor(double(ox) * W / out[1]));
          const int64_t x1 = int64_t(std::ceil(double(ox + 1) * W / out[1]));
          double sum = 0;
          float row_major = 0.0f;  // PyTorch's order: the float sum must be the same, bit for bit
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) {
              sum += x[(p * H + iy) * W + ix];
              row_major += x[(p * H + iy) * W + ix];
            }
          const float got = y[(p * out[0] + oy) * out[1] + ox];
          REQUIRE(got == Approx(sum / double((y1 - y0) * (x1 - x0))).margin(2e-6));
          REQUIRE(got == row_major / float((y1 - y0) * (x1 - x0)));
        }
  }
  // Linear, so the SNN view is the ANN view of each step.
  AdaptiveAvgPool2d layer("gap", 3, 2);
  REQUIRE(layer.preserves_events());
  REQUIRE_FALSE(layer.stateful());
  REQUIRE_THROWS_WITH(AdaptiveAvgPool2d("gap0", 0, 2), Catch::Contains("gap0"));
  REQUIRE_THROWS_WITH(layer.output_shape({{12}}), Catch::Contains("'gap'") && Catch::Contains("[C, H, W]"));
}

TEST_CASE("spiking max pooling with ceil_mode windows: output count = the largest input count", "[layers]") {
  std::mt19937 rng(33);
  std::bernoulli_distribution fire(0.35);
  PoolSpec s{3, 3, 2, 2, 1, 1};
  s.ceil_mode = true;
  MaxPool2d pool("pool", s);
  const Shape in = {2, 6, 5};
  const Shape os = pool.output_shape({in});
  REQUIRE(os == Shape{2, 4, 3});  // floor mode would give 3x3
  const int64_t T = 9, B = 2, per_in = numel_of(in), per_out = numel_of(os);
  Tensor x({T * B, 2, 6, 5});
  for (auto& v : x.values()) v = fire(rng) ? 1.0f : 0.0f;
  snn_test::CpuRun k(pool, {in}, B);
  std::vector<float> in_sum(size_t(B * per_in), 0.0f), out_sum(size_t(B * per_out), 0.0f);
  for (int64_t t0 = 0; t0 < T; t0 += 4) {
    const int64_t steps = std::min<int64_t>(4, T - t0);
    Tensor chunk = x.slice0(t0 * B, steps * B), y;
    k.snn({&chunk}, y, StepChunk{t0, steps, B});
    REQUIRE(y.shape() == Shape{steps * B, 2, 4, 3});
    for (int64_t t = 0; t < steps; ++t) {
      for (int64_t i = 0; i < B * per_in; ++i) in_sum[size_t(i)] += chunk[t * B * per_in + i];
      for (int64_t i = 0; i < B * per_out; ++i) {
        REQUIRE((y[t * B * per_out + i] == 0.0f || y[t * B * per_out + i] == 1.0f));
        out_sum[size_t(i)] += y[t * B * per_out + i];
      }
      const PoolRef ref = ref_pool(Tensor({B, 2, 6, 5}, in_sum), B * 2, 6, 5, s);
      for (int64_t i = 0; i < B * per_out; ++i) REQUIRE(out_sum[size_t(i)] == ref.max[size_t(i)]);
    }
  }
}

TEST_CASE("pooling attributes: errors and summaries", "[layers]") {
  PoolSpec s{2, 2, 3, 3, 1, 1};
  s.ceil_mode = true;
  s.count_include_pad = false;
  AvgPool2d avg("avgc", s);
  REQUIRE(avg.summary().find("ceil") != std::string::npos);
  REQUIRE(avg.summary().find("count_include_pad=0") != std::string::npos);
  REQUIRE(AvgPool2d("plain", PoolSpec{}).summary() == "k2x2 s2 p0");
  // ceil_mode drops a last window that would start in the right padding: 4 + 2 - 2 = 4, ceil(4/3) + 1 = 3,
  // but window 2 would start at 2·3 − 1 = 5 ≥ 4 + 1.
  REQUIRE(avg.output_shape({{1, 4, 4}}) == Shape{1, 2, 2});
  REQUIRE_THROWS_WITH(AvgPool2d("tiny", PoolSpec{3, 3, 1, 1, 0, 0}).output_shape({{1, 2, 5}}),
                      Catch::Contains("tiny") && Catch::Contains("smaller than the pooling window"));
}
