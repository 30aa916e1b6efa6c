// Threshold selection checked against a direct computation on a small hand-built network: the ANN
// view's activations of every ReLU layer over the calibration images, sorted, p-th percentile with
// linear interpolation (numpy's default) of the positive values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "snn/conversion/thresholds.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "snn/layers/all.hpp"
#include "test_util.hpp"

using namespace snn;
using namespace snn::conversion;

namespace {

using snn_test::random_tensor;

// conv -> relu -> conv1x1 -> clip(0.7) -> avgpool -> flatten -> linear -> relu -> linear(0 weights,
// bias -1) -> relu (never active) -> linear readout. Input [2, 5, 5].
Network make_net(std::mt19937& rng) {
  Network net({2, 5, 5});
  net.add(std::make_unique<Conv2d>("conv1", Conv2dSpec{2, 3, 3, 3, 1, 1, 1, 1, 1}, random_tensor({3, 2, 3, 3}, rng, -0.5f, 0.5f),
                                   random_tensor({3}, rng, -0.1f, 0.1f)));
  net.add(std::make_unique<NeuronLayer>("relu1", 3, std::vector<float>{1.0f}));
  net.add(std::make_unique<Conv2d>("conv2", Conv2dSpec{3, 3, 1, 1, 1, 1, 0, 0, 1}, random_tensor({3, 3, 1, 1}, rng, -1.0f, 1.0f)));
  net.add(std::make_unique<NeuronLayer>("clip2", 3, std::vector<float>{0.7f}, SourceActivation::Clip));
  net.add(std::make_unique<AvgPool2d>("pool", PoolSpec{2, 2, 2, 2, 0, 0}));
  net.add(std::make_unique<Flatten>("flatten"));
  net.add(std::make_unique<Linear>("fc1", random_tensor({6, 12}, rng, -0.5f, 0.5f), random_tensor({6}, rng, -0.1f, 0.1f)));
  net.add(std::make_unique<NeuronLayer>("relu3", 6, std::vector<float>{1.0f}));
  net.add(std::make_unique<Linear>("dead_fc", Tensor({4, 6}, 0.0f), Tensor({4}, -1.0f)));
  net.add(std::make_unique<NeuronLayer>("relu_dead", 4, std::vector<float>{1.0f}));
  net.add(std::make_unique<Linear>("out", random_tensor({3, 4}, rng, -0.5f, 0.5f)));
  return net;
}

Dataset make_data(int64_t n, std::mt19937& rng) {
  Dataset d;
  d.images = random_tensor({n, 2, 5, 5}, rng, -1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(int32_t(i % 3));
  d.num_classes = 3;
  d.source = "synthetic";
  return d;
}

double ref_percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

// Positive ANN-view activations of node `node` over the first n images, per channel (or all in one).
std::vector<std::vector<double>> positives(const Network& net, const Dataset& d, int64_t n, int node, bool per_channel) {
  CpuBackend cpu(1);
  std::vector<Tensor> outs;
  cpu.forward_ann(net, d.batch_images(0, n), &outs);
  const Tensor& o = outs[size_t(node)];
  const int64_t c = o.dim(1), inner = o.numel() / (n * c);
  std::vector<std::vector<double>> r(per_channel ? size_t(c) : 1);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i) {
        const float v = o[(b * c + ch) * inner + i];
        if (v > 0) r[per_channel ? size_t(ch) : 0].push_back(v);
      }
  return r;
}

const LayerThreshold& find(const ThresholdReport& r, const std::string& name) {
  for (const auto& l : r.layers)
    if (l.layer == name) return l;
  FAIL("no threshold for " << name);
  throw 0;
}

}  // namespace

TEST_CASE("percentile_of interpolates like numpy", "[thresholds]") {
  std::vector<float> v = {4, 1, 3, 2};
  CHECK(percentile_of(v, 50) == Approx(2.5));
  CHECK(percentile_of(v, 100) == Approx(4));
  CHECK(percentile_of(v, 0) == Approx(1));
  CHECK(percentile_of(v, 99.99) == Approx(3.9997));
  std::vector<float> one = {5};
  CHECK(percentile_of(one, 30) == Approx(5));
  std::vector<float> none;
  CHECK_THROWS_AS(percentile_of(none, 50), snn::Error);
}

TEST_CASE("max and percentile thresholds match a direct computation", "[thresholds]") {
  std::mt19937 rng(42);
  Network net = make_net(rng);
  const Dataset data = make_data(60, rng);
  CpuBackend cpu(1);
  REQUIRE(needs_data_thresholds(net));

  const int relu1 = net.find("relu1"), relu3 = net.find("relu3"), clip2 = net.find("clip2");
  const auto pos1 = positives(net, data, 60, relu1, false)[0];
  const auto pos3 = positives(net, data, 60, relu3, false)[0];
  REQUIRE(pos1.size() > 100);

  SECTION("max, per layer") {
    NormOptions o;
    o.method = NormMethod::Max;
    o.batch_size = 7;  // several batches and a short last one
    ThresholdReport r = set_thresholds(net, cpu, data, o);
    CHECK(r.images == 60);
    CHECK(net.neuron(relu1).threshold() == std::vector<float>{float(*std::max_element(pos1.begin(), pos1.end()))});
    CHECK(net.neuron(relu3).threshold() == std::vector<float>{float(*std::max_element(pos3.begin(), pos3.end()))});
    CHECK(find(r, "relu1").values == int64_t(pos1.size()));
  }
  SECTION("percentile 99, per layer") {
    NormOptions o;
    o.percentile = 99.0;
    set_thresholds(net, cpu, data, o);
    CHECK(net.neuron(relu1).threshold()[0] == Approx(ref_percentile(pos1, 99.0)).epsilon(1e-6));
    CHECK(net.neuron(relu3).threshold()[0] == Approx(ref_percentile(pos3, 99.0)).epsilon(1e-6));
  }
  SECTION("percentile 90, per channel") {
    NormOptions o;
    o.percentile = 90.0;
    o.channelwise = true;
    o.batch_size = 16;
    set_thresholds(net, cpu, data, o);
    const auto per1 = positives(net, data, 60, relu1, true);
    REQUIRE(net.neuron(relu1).threshold().size() == 3);
    for (size_t c = 0; c < 3; ++c)
      CHECK(net.neuron(relu1).threshold()[c] == Approx(ref_percentile(per1[c], 90.0)).epsilon(1e-6));
    const auto per3 = positives(net, data, 60, relu3, true);
    REQUIRE(net.neuron(relu3).threshold().size() == 6);
    for (size_t c = 0; c < 6; ++c)
      if (!per3[c].empty()) CHECK(net.neuron(relu3).threshold()[c] == Approx(ref_percentile(per3[c], 90.0)).epsilon(1e-6));
  }
  SECTION("max_images limits the calibration set") {
    NormOptions o;
    o.method = NormMethod::Max;
    o.max_images = 25;
    o.batch_size = 10;
    ThresholdReport r = set_thresholds(net, cpu, data, o);
    CHECK(r.images == 25);
    const auto p25 = positives(net, data, 25, relu1, false)[0];
    CHECK(net.neuron(relu1).threshold()[0] == float(*std::max_element(p25.begin(), p25.end())));
  }
  SECTION("clip layers keep their threshold; a silent layer gets 1 and a note") {
    NormOptions o;
    ThresholdReport r = set_thresholds(net, cpu, data, o);
    CHECK(net.neuron(clip2).threshold() == std::vector<float>{0.7f});
    CHECK(net.neuron(net.find("relu_dead")).threshold() == std::vector<float>{1.0f});
    CHECK(find(r, "relu_dead").degenerate);
    CHECK(r.layers.size() == 3);  // relu1, relu3, relu_dead
    bool noted = false;
    for (const auto& n : r.notes) noted = noted || n.find("relu_dead") != std::string::npos;
    CHECK(noted);
  }
}

TEST_CASE("thresholds beyond max_values: exact top percentiles, sampled low ones", "[thresholds]") {
  std::mt19937 rng(5);
  Network net = make_net(rng);
  const Dataset data = make_data(120, rng);
  CpuBackend cpu(1);
  const int relu1 = net.find("relu1");
  const auto pos1 = positives(net, data, 120, relu1, false)[0];
  REQUIRE(pos1.size() > 2500);  // well above the 1024 values kept

  NormOptions o;
  o.max_values = 1024;
  o.batch_size = 32;
  o.percentile = 99.9;
  ThresholdReport r = set_thresholds(net, cpu, data, o);
  CHECK_FALSE(find(r, "relu1").estimated);
  CHECK(net.neuron(relu1).threshold()[0] == Approx(ref_percentile(pos1, 99.9)).epsilon(1e-6));

  o.percentile = 50.0;
  r = set_thresholds(net, cpu, data, o);
  CHECK(find(r, "relu1").estimated);
  const double exact = ref_percentile(pos1, 50.0);
  CHECK(std::abs(net.neuron(relu1).threshold()[0] - exact) < 0.15 * exact);
}

TEST_CASE("threshold calibration rejects unusable data", "[thresholds]") {
  std::mt19937 rng(1);
  Network net = make_net(rng);
  CpuBackend cpu(1);
  Dataset empty;
  empty.images = Tensor({0, 2, 5, 5});
  CHECK_THROWS_WITH(set_thresholds(net, cpu, empty, NormOptions{}), Catch::Contains("no images"));
  Dataset wrong;
  wrong.images = random_tensor({4, 1, 5, 5}, rng, 0, 1);
  wrong.labels = {0, 1, 2, 0};
  wrong.num_classes = 3;
  CHECK_THROWS_WITH(set_thresholds(net, cpu, wrong, NormOptions{}), Catch::Contains("[1, 5, 5]"));
  NormOptions bad;
  bad.percentile = 0.0;
  CHECK_THROWS_AS(set_thresholds(net, cpu, make_data(3, rng), bad), snn::Error);
  CHECK(parse_norm_method("max") == NormMethod::Max);
  CHECK_THROWS_AS(parse_norm_method("median"), snn::Error);
}

namespace {
// The T-step IF quantiser's squared error summed over values, written out directly.
double quantisation_error(const std::vector<float>& xs, double theta, int64_t T, double v_init) {
  double e = 0.0;
  for (float x : xs) {
    double n = std::floor(double(x) * double(T) / theta + v_init);
    n = std::min(std::max(n, 0.0), double(T));
    e += std::pow(double(x) - theta * n / double(T), 2);
  }
  return e;
}
}  // namespace

TEST_CASE("least-error thresholds: as good as a fine brute-force scan, lower for fewer steps", "[thresholds]") {
  std::mt19937 rng(7);
  std::exponential_distribution<float> heavy(1.0f);  // a long tail, as ReLU activations have
  std::vector<float> xs(20000);
  for (float& x : xs) x = heavy(rng);
  const float top = *std::max_element(xs.begin(), xs.end());
  double previous = 0.0;
  for (int64_t T : {1, 2, 4, 8, 32}) {
    for (double v_init : {0.5, 0.0}) {
      const double theta = min_error_threshold(xs, T, v_init);
      REQUIRE(theta > 0.0);
      REQUIRE(theta <= top);
      double scan_best = 1e300;
      for (int i = 1; i <= 4000; ++i) scan_best = std::min(scan_best, quantisation_error(xs, top * i / 4000.0, T, v_init));
      INFO("T = " << T << ", v_init = " << v_init << ": theta " << theta);
      CHECK(quantisation_error(xs, theta, T, v_init) <= scan_best * 1.002);
      if (v_init == 0.5) {
        CHECK(theta > previous);  // more steps: finer levels, so the clip can move up the tail
        previous = theta;
      }
    }
  }
  // A constant activation is reproduced exactly at any T by θ equal to it.
  const std::vector<float> constant(100, 0.75f);
  CHECK(quantisation_error(constant, min_error_threshold(constant, 3, 0.5), 3, 0.5) < 1e-9);
  CHECK_THROWS_AS(min_error_threshold({}, 4, 0.5), snn::Error);
  CHECK_THROWS_AS(min_error_threshold(xs, 0, 0.5), snn::Error);
}

TEST_CASE("least-error thresholds set per layer from the ANN activations", "[thresholds]") {
  std::mt19937 rng(42);
  Network net = make_net(rng);
  const Dataset data = make_data(60, rng);
  CpuBackend cpu(1);
  const int relu1 = net.find("relu1"), clip2 = net.find("clip2");
  const auto pos1_double = positives(net, data, 60, relu1, false)[0];
  const std::vector<float> pos1(pos1_double.begin(), pos1_double.end());
  const float clip_before = net.neuron(clip2).threshold()[0];
  NormOptions o;
  o.method = NormMethod::MinError;
  o.timesteps = 4;
  const ThresholdReport r = set_thresholds(net, cpu, data, o);
  CHECK(net.neuron(relu1).threshold()[0] == Approx(min_error_threshold(pos1, 4, 0.5)).epsilon(1e-6));
  CHECK(net.neuron(clip2).threshold()[0] == clip_before);  // a clip's θ is the model's
  CHECK_THAT(r.notes.at(0), Catch::Contains("error for T = 4"));
  o.timesteps = 0;
  CHECK_THROWS_WITH(set_thresholds(net, cpu, data, o), Catch::Contains("number of timesteps"));
  CHECK(parse_norm_method("error") == NormMethod::MinError);
}
