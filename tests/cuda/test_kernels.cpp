// Every stateless CUDA kernel against its CPU twin (cpu::make_kernel on the same layer), llm.c style:
// conv2d (stride, padding, groups, no bias) and linear agree within float rounding on random data and
// exactly on exact (dyadic) data; pooling (ceil_mode, count_include_pad, adaptive windows included), add,
// flatten, channel gather, nearest upsampling and channel affine agree bit for bit.
#include <array>
#include <catch2/catch.hpp>

#include "cuda_test_util.hpp"

using namespace snn;
using cuda_test::Twin;

namespace {

struct ConvCase {
  const char* name;
  Conv2dSpec spec;
  bool bias;
  int64_t h, w;
};

}  // namespace

TEST_CASE("cuda conv2d matches the CPU twin", "[kernels][conv2d]") {
  std::mt19937 rng(11);
  const ConvCase cases[] = {
      {"3x3 pad 1", {3, 8, 3, 3, 1, 1, 1, 1, 1}, true, 9, 7},
      {"3x3 stride 2 no pad", {4, 6, 3, 3, 2, 2, 0, 0, 1}, true, 11, 10},
      {"groups 2, no bias", {4, 6, 3, 3, 1, 1, 1, 1, 2}, false, 8, 8},
      {"depthwise 3x3 stride 2", {6, 6, 3, 3, 2, 2, 1, 1, 6}, true, 9, 9},
      {"3x1 stride (1,2) pad (1,0)", {5, 4, 3, 1, 1, 2, 1, 0, 1}, true, 6, 9},
      {"1x1", {7, 5, 1, 1, 1, 1, 0, 0, 1}, false, 5, 5},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const Conv2dSpec& s = c.spec;
    const Shape wshape = {s.out_channels, s.in_channels / s.groups, s.kernel_h, s.kernel_w};
    for (bool exact : {false, true}) {
      INFO((exact ? "exact data" : "random data"));
      Tensor w = exact ? cuda_test::dyadic_tensor(wshape, rng, -0.5f, 0.5f, 16)
                       : snn_test::random_tensor(wshape, rng, -0.5f, 0.5f);
      Tensor b = c.bias ? (exact ? cuda_test::dyadic_tensor({s.out_channels}, rng, -1, 1, 16)
                                 : snn_test::random_tensor({s.out_channels}, rng))
                        : Tensor();
      Conv2d layer("conv", s, w, b);
      Twin twin(layer, {{s.in_channels, c.h, c.w}});
      for (int64_t n : {1, 5, 17}) {  // several batch sizes: one algorithm choice per size
        Tensor x = exact ? cuda_test::dyadic_tensor({n, s.in_channels, c.h, c.w}, rng, -1, 1, 64)
                         : snn_test::random_tensor({n, s.in_channels, c.h, c.w}, rng);
        auto [co, go] = twin.forward({x});
        REQUIRE(co.shape() == go.shape());
        if (exact)
          REQUIRE(co.values() == go.values());
        else
          REQUIRE(cuda_test::max_rel_diff(co, go) < 1e-5);
      }
    }
  }
}

TEST_CASE("cuda linear matches the CPU twin", "[kernels][linear]") {
  std::mt19937 rng(12);
  for (bool bias : {true, false})
    for (bool exact : {false, true}) {
      INFO("bias " << bias << ", exact " << exact);
      const int64_t I = 96, O = 13;
      Tensor w = exact ? cuda_test::dyadic_tensor({O, I}, rng, -0.5f, 0.5f, 16) : snn_test::random_tensor({O, I}, rng);
      Tensor b = bias ? cuda_test::dyadic_tensor({O}, rng, -1, 1, 16) : Tensor();
      Linear layer("fc", w, b);
      Twin twin(layer, {{I}});
      for (int64_t n : {1, 7, 64}) {
        Tensor x = exact ? cuda_test::dyadic_tensor({n, I}, rng, -1, 1, 64) : snn_test::random_tensor({n, I}, rng);
        auto [co, go] = twin.forward({x});
        REQUIRE(go.shape() == Shape{n, O});
        if (exact)
          REQUIRE(co.values() == go.values());
        else
          REQUIRE(cuda_test::max_rel_diff(co, go) < 1e-5);
      }
      // A [n, C, H, W] input is read as [n, C·H·W], as on the CPU.
      Tensor x4 = snn_test::random_tensor({3, 6, 4, 4}, rng);
      auto [co, go] = twin.forward({x4});
      REQUIRE(go.shape() == Shape{3, O});
      REQUIRE(cuda_test::max_rel_diff(co, go) < 1e-5);
    }
}

TEST_CASE("cuda pooling, add and flatten match the CPU twins bit for bit", "[kernels][pool]") {
  std::mt19937 rng(13);
  const PoolSpec specs[] = {{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 0}, {2, 2, 1, 1, 0, 0}};
  for (const auto& s : specs) {
    INFO("pool " << s.kernel_h << "x" << s.kernel_w << " stride " << s.stride_h << "," << s.stride_w << " pad "
                 << s.pad_h << "," << s.pad_w);
    const Shape in = {3, 7, 9};
    Tensor x = snn_test::random_tensor({4, 3, 7, 9}, rng, -2, 2);
    {
      AvgPool2d layer("avg", s);
      Twin(layer, {in}).require_identical({x});
    }
    {
      MaxPool2d layer("max", s);
      Twin(layer, {in}).require_identical({x});
    }
  }
  {
    Add layer("add");
    Twin twin(layer, {{3, 5, 5}, {3, 5, 5}});
    Tensor a = snn_test::random_tensor({6, 3, 5, 5}, rng), b = snn_test::random_tensor({6, 3, 5, 5}, rng);
    auto [co, go] = twin.forward({a, b});
    REQUIRE(co.values() == go.values());
  }
  {
    Flatten layer("flatten");
    cuda::Context ctx;
    auto k = cuda::make_kernel(layer, {{3, 4, 5}}, ctx);
    Tensor x = snn_test::random_tensor({2, 3, 4, 5}, rng);
    cuda::DeviceTensor dx = cuda::DeviceTensor::from_host(x), out;
    k->forward({&dx}, out);
    REQUIRE(out.shape() == Shape{2, 60});
    REQUIRE(out.is_alias());
    REQUIRE(out.data() == dx.data());  // a view: no copy
    REQUIRE(out.to_host().values() == x.values());
  }
}

TEST_CASE("cuda spiking max pooling matches the CPU twin across chunks", "[kernels][pool]") {
  std::mt19937 rng(14);
  const PoolSpec specs[] = {{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}};
  for (const auto& s : specs)
    for (bool spikes : {true, false}) {
      INFO("kernel " << s.kernel_h << ", spike inputs " << spikes);
      MaxPool2d layer("max", s);
      const Shape in = {3, 6, 6};
      Twin twin(layer, {in});
      const int64_t B = 4;
      auto cs = twin.cpu->make_state(B);
      auto gs = twin.gpu->make_state(B);
      std::bernoulli_distribution fire(0.3);
      int64_t t0 = 0;
      for (int64_t steps : {3, 1, 4}) {  // three chunks: the running sums carry across
        Tensor x({steps * B, 3, 6, 6});
        for (auto& v : x.values())
          v = spikes ? (fire(rng) ? 0.75f : 0.0f) : float(std::normal_distribution<float>(0.2f, 1.0f)(rng));
        Tensor co;
        cuda::DeviceTensor dx = cuda::DeviceTensor::from_host(x), go;
        const StepChunk chunk{t0, steps, B};
        twin.cpu->forward_snn({&x}, co, cs.get(), chunk);
        twin.gpu->forward_snn({&dx}, go, gs.get(), chunk);
        INFO("chunk at t0 = " << t0);
        REQUIRE(go.shape() == co.shape());
        REQUIRE(go.to_host().values() == co.values());
        t0 += steps;
      }
    }
}

TEST_CASE("cuda pooling with ceil_mode, count_include_pad and adaptive windows matches the CPU bit for bit",
          "[kernels][pool]") {
  std::mt19937 rng(15);
  struct Mode {
    PoolSpec spec;
    bool ceil, count_pad;
  };
  const Mode modes[] = {{{3, 3, 2, 2, 0, 0}, true, true},  {{3, 3, 2, 2, 1, 1}, true, false},
                        {{3, 3, 2, 2, 1, 1}, false, false}, {{2, 2, 3, 3, 1, 1}, true, true},
                        {{3, 2, 2, 1, 1, 0}, true, false},  {{2, 2, 2, 2, 0, 0}, true, true}};
  for (const Mode& m : modes) {
    PoolSpec s = m.spec;
    s.ceil_mode = m.ceil;
    s.count_include_pad = m.count_pad;
    INFO("k " << s.kernel_h << "x" << s.kernel_w << " s " << s.stride_h << "," << s.stride_w << " p " << s.pad_h
              << "," << s.pad_w << " ceil " << s.ceil_mode << " count_include_pad " << s.count_include_pad);
    for (const Shape& in : {Shape{3, 7, 8}, Shape{2, 4, 4}, Shape{2, 9, 5}}) {
      Tensor x = snn_test::random_tensor({5, in[0], in[1], in[2]}, rng, -2, 2);
      {
        AvgPool2d layer("avg", s);
        Twin(layer, {in}).require_identical({x});
      }
      {
        MaxPool2d layer("max", s);
        Twin(layer, {in}).require_identical({x});
      }
    }
  }
  const std::vector<std::array<int64_t, 4>> adaptive = {{5, 5, 3, 3},   {7, 7, 3, 3}, {2, 2, 7, 7}, {1, 1, 6, 6},
                                                        {6, 6, 6, 6}, {10, 10, 4, 4}, {9, 4, 4, 6}, {7, 5, 1, 1}};
  for (auto [h, w, oh, ow] : adaptive) {
    INFO("adaptive " << h << "x" << w << " -> " << oh << "x" << ow);
    AdaptiveAvgPool2d layer("gap", oh, ow);
    Twin twin(layer, {{3, h, w}});
    Tensor x = snn_test::random_tensor({4, 3, h, w}, rng, -2, 2);
    auto [co, go] = twin.forward({x});
    REQUIRE(co.shape() == go.shape());
    REQUIRE(co.values() == go.values());
  }
}

TEST_CASE("cuda spiking max pooling with ceil_mode windows matches the CPU twin across chunks", "[kernels][pool]") {
  std::mt19937 rng(16);
  PoolSpec s{3, 3, 2, 2, 1, 1};
  s.ceil_mode = true;
  MaxPool2d layer("max", s);
  const Shape in = {2, 6, 5};
  Twin twin(layer, {in});
  const int64_t B = 3;
  auto cs = twin.cpu->make_state(B);
  auto gs = twin.gpu->make_state(B);
  std::bernoulli_distribution fire(0.3);
  int64_t t0 = 0;
  for (int64_t steps : {2, 3, 1}) {
    Tensor x({steps * B, 2, 6, 5});
    for (auto& v : x.values()) v = fire(rng) ? 1.0f : 0.0f;
    Tensor co;
    cuda::DeviceTensor dx = cuda::DeviceTensor::from_host(x), go;
    const StepChunk chunk{t0, steps, B};
    twin.cpu->forward_snn({&x}, co, cs.get(), chunk);
    twin.gpu->forward_snn({&dx}, go, gs.get(), chunk);
    INFO("chunk at t0 = " << t0);
    REQUIRE(go.shape() == co.shape());
    REQUIRE(go.to_host().values() == co.values());
    t0 += steps;
  }
}

TEST_CASE("cuda channel gather matches the CPU twin bit for bit", "[kernels][gather]") {
  std::mt19937 rng(17);
  SECTION("three inputs, channels repeated and shuffled") {
    ChannelGather layer("mix", 3, {2, 0, 1, 1, 0, 2, 2, 0}, {0, 1, 3, 0, 1, 1, 0, 0});
    const std::vector<Shape> in = {{2, 5, 6}, {4, 5, 6}, {2, 5, 6}};
    Twin twin(layer, in);
    for (int64_t n : {1, 6}) {
      Tensor a = snn_test::random_tensor({n, 2, 5, 6}, rng), b = snn_test::random_tensor({n, 4, 5, 6}, rng),
             c = snn_test::random_tensor({n, 2, 5, 6}, rng);
      auto [co, go] = twin.forward({a, b, c});  // new device tensors each call: the pointer table follows
      REQUIRE(co.shape() == go.shape());
      REQUIRE(co.values() == go.values());
    }
  }
  SECTION("concat of vectors") {
    const ChannelGather layer = ChannelGather::concat("vcat", {7, 3});
    Twin twin(layer, {{7}, {3}});
    Tensor a = snn_test::random_tensor({5, 7}, rng), b = snn_test::random_tensor({5, 3}, rng);
    auto [co, go] = twin.forward({a, b});
    REQUIRE(go.shape() == Shape{5, 10});
    REQUIRE(co.values() == go.values());
  }
  SECTION("many inputs") {
    std::vector<int64_t> src_in, src_ch;
    std::vector<Shape> in;
    std::vector<Tensor> xs;
    for (int i = 0; i < 40; ++i) {
      in.push_back({1 + i % 3, 2, 3});
      xs.push_back(snn_test::random_tensor({2, 1 + i % 3, 2, 3}, rng));
      src_in.push_back(39 - i);
      src_ch.push_back((39 - i) % 3);
    }
    ChannelGather layer("wide", 40, src_in, src_ch);
    Twin twin(layer, in);
    auto [co, go] = twin.forward(xs);
    REQUIRE(co.values() == go.values());
  }
}

TEST_CASE("cuda nearest upsampling matches the CPU twin bit for bit", "[kernels][upsample]") {
  std::mt19937 rng(18);
  const UpsampleSpec specs[] = {{10, 12, 0.5f, 0.5f, false},           {7, 9, 5.0f / 7.0f, 6.0f / 9.0f, false},
                                {7, 9, 5.0f / 7.0f, 6.0f / 9.0f, true}, {2, 3, 2.5f, 2.0f, true},
                                {26, 12, float(1.0 / 2.05), 0.5f, false}};
  for (const auto& s : specs) {
    INFO("to " << s.out_h << "x" << s.out_w << " exact " << s.exact);
    UpsampleNearest layer("up", s);
    Twin twin(layer, {{3, 5, 6}});
    Tensor x = snn_test::random_tensor({4, 3, 5, 6}, rng);
    auto [co, go] = twin.forward({x});
    REQUIRE(go.shape() == Shape{4, 3, s.out_h, s.out_w});
    REQUIRE(co.values() == go.values());
  }
}

TEST_CASE("cuda channel affine matches the CPU twin bit for bit", "[kernels][affine]") {
  std::mt19937 rng(19);
  ChannelAffine layer("bn", snn_test::random_tensor({5}, rng, -3, 3), snn_test::random_tensor({5}, rng));
  for (const Shape& in : {Shape{5, 7, 3}, Shape{5}}) {
    Twin twin(layer, {in});
    Shape xs = {9};
    xs.insert(xs.end(), in.begin(), in.end());
    Tensor x = snn_test::random_tensor(xs, rng, -4, 4);  // random data: rounding must agree, not just exact sums
    auto [co, go] = twin.forward({x});
    REQUIRE(co.shape() == go.shape());
    REQUIRE(co.values() == go.values());
  }
}
