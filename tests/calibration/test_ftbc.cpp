// FTBC and the simpler calibrations: the bias does what it claims, causally, with clear errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "snn/conversion/auto_calibration.hpp"
#include "snn/conversion/calibration.hpp"
#include "snn/conversion/ftbc.hpp"
#include "snn/conversion/thresholds.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "snn/sweep.hpp"
#include "test_util.hpp"

using namespace snn;
using namespace snn::conversion;
using snn_test::ann_labelled;
using snn_test::random_tensor;

namespace {

// A ReLU network with thresholds at each layer's maximum ANN activation (the classic "max norm"
// conversion), which is badly under-firing at low T: the case FTBC exists for.
Network max_norm_network(std::mt19937& rng, const Tensor& calib, bool residual = false, float v_init = 0.5f) {
  Network net = snn_test::small_cnn(rng, SourceActivation::ReLU, 0, false, residual);
  for (int i : net.neuron_nodes()) {
    NeuronConfig cfg = net.neuron(i).config();
    cfg.v_init = v_init;
    net.neuron(i).set_config(cfg);
  }
  CpuBackend cpu(2);
  std::vector<Tensor> outs;
  cpu.forward_ann(net, calib, &outs);
  for (int i : net.neuron_nodes()) {
    float m = 1e-3f;
    for (float v : outs[size_t(i)].values()) m = std::max(m, v);
    net.neuron(i).set_threshold({m});
  }
  return net;
}

// Sum of the spike output per layer, per step, per channel on `images` (the backend's per-channel means
// times the neurons per channel).
struct LayerMeans : NeuronProbe {
  std::map<int, std::vector<std::vector<double>>> spikes;  // node -> [t][c] means
  void after_layer(NeuronLayerAccess& layer) override {
    const int64_t C = layer.channels();
    const std::vector<double>& m = layer.output_channel_means();
    auto& s = spikes[layer.node()];
    for (int64_t t = 0; t < layer.chunk().steps; ++t) s.emplace_back(m.begin() + t * C, m.begin() + (t + 1) * C);
  }
};

// |E[s_l[t]] − E[a_l]| over layers, steps and channels, in units of the layer's threshold: worst and mean.
struct StepError {
  double worst = 0, mean = 0;
};
StepError step_error(Network& net, const Tensor& images, int64_t T) {
  CpuBackend cpu(2);
  std::vector<Tensor> ann;
  cpu.forward_ann(net, images, &ann);
  LayerMeans h;
  SimulationOptions o;
  o.timesteps = T;
  auto program = cpu.prepare(net);
  cpu.simulate(*program, images, o, &h);
  StepError e;
  int64_t count = 0;
  for (int node : net.neuron_nodes()) {
    const int64_t C = net.neuron(node).channels(), B = images.dim(0);
    const int64_t inner = ann[size_t(node)].numel() / (B * C);
    for (int64_t c = 0; c < C; ++c) {
      double a = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < inner; ++i) a += ann[size_t(node)][(b * C + c) * inner + i];
      a /= double(B * inner);
      for (int64_t t = 0; t < T; ++t) {
        const double s = h.spikes[node][size_t(t)][size_t(c)];
        const double err = std::fabs(s - a) / net.neuron(node).theta(c);
        e.worst = std::max(e.worst, err);
        e.mean += err;
        ++count;
      }
    }
  }
  e.mean /= double(count);
  return e;
}

CalibrationOptions options(int64_t T, int64_t batches, int64_t batch_size, int64_t iters = 1) {
  CalibrationOptions o;
  o.timesteps = T;
  o.batches = batches;
  o.batch_size = batch_size;
  o.iters = iters;
  return o;
}

}  // namespace

// The under-firing max-norm network of the residual tests, its images labelled by its ANN, T = 6.
struct ResidualCase {
  std::mt19937 rng{40};
  const Tensor images = random_tensor({64, 2, 8, 8}, rng, 0.0f, 1.0f);
  Network net = max_norm_network(rng, images);
  Dataset d = ann_labelled(net, images);
  CpuBackend cpu{2};
  const int64_t T = 6;
};

TEST_CASE("FTBC makes every layer's mean spike output match the ANN at every step", "[ftbc]") {
  ResidualCase rc;
  auto& [rng, images, net, d, cpu, T] = rc;
  (void)rng;
  const StepError before = step_error(net, images, T);
  // One fixed batch, repeated passes (α = 0.5): the update is a damped fixed-point iteration on each
  // channel's mean, so the residual shrinks until it reaches the granularity of that mean.
  FtbcCalibrator ftbc;
  ftbc.calibrate(net, cpu, d, options(T, 1, 64, 30));
  const StepError after = step_error(net, images, T);
  INFO("|E[s[t]] - E[a]| / θ before: worst " << before.worst << " mean " << before.mean << "; after: worst "
                                             << after.worst << " mean " << after.mean);
  REQUIRE(before.worst > 0.1);
  // Tolerances. A channel's mean spike output is not a continuous function of its bias: act2 has
  // 64 images × 4 positions per channel, so one neuron moves the mean by θ/256, and at t = 0 every
  // neuron of a channel starts from the same v0, so inputs that are equal (padding corners give equal
  // pre-activations) cross θ together — jumps of up to ~0.04 θ in this network. The best any bias can
  // do is half a jump, hence worst < 0.03 θ; on average the residual must be ten times smaller than
  // the uncalibrated error (measured: 0.040 -> 0.003).
  REQUIRE(after.worst < 0.03);
  REQUIRE(after.mean < before.mean / 10);
}

TEST_CASE("ftbc-exact reaches in one pass the residual that the damped update needs 30 passes for", "[ftbc]") {
  ResidualCase rc;  // the network and images of the test above
  auto& [rng, images, net, d, cpu, T] = rc;
  (void)rng;
  const StepError before = step_error(net, images, T);
  Network one_pass = net;
  FtbcCalibrator().calibrate(one_pass, cpu, d, options(T, 1, 64, 1));
  const StepError damped = step_error(one_pass, images, T);
  const CalibrationReport r = make_calibrator("ftbc-exact")->calibrate(net, cpu, d, options(T, 1, 64, 1));
  const StepError exact = step_error(net, images, T);
  INFO("|E[s[t]] - E[a]| / θ worst/mean: before " << before.worst << "/" << before.mean << ", ftbc one pass "
                                                  << damped.worst << "/" << damped.mean << ", exact " << exact.worst
                                                  << "/" << exact.mean);
  REQUIRE(r.method == "ftbc-exact");
  REQUIRE(r.parameters.at("variant") == "exact");
  REQUIRE(exact.worst < 0.03);  // the granularity bound explained above
  REQUIRE(exact.mean < before.mean / 10);
  REQUIRE(exact.mean < damped.mean / 2);
}

TEST_CASE("ftbc-auto: held-out images are calibration images the fit never sees", "[ftbc]") {
  CalibrationOptions o = options(8, 3, 20);
  o.seed = 9;
  const int64_t n = 200;
  const auto batches = calibration_batches(o, n);
  const auto held = held_out_indices(o, n, n - 60);
  REQUIRE(held.size() == 140);
  std::set<int64_t> fit;
  for (const auto& b : batches) fit.insert(b.begin(), b.end());
  REQUIRE(fit.size() == 60);
  for (int64_t i : held) {
    REQUIRE(i >= 0);
    REQUIRE(i < n);
    REQUIRE(fit.count(i) == 0);
  }
  REQUIRE(std::set<int64_t>(held.begin(), held.end()).size() == held.size());
  const auto ranges = doubling_ranges(20);
  const std::vector<std::pair<int64_t, int64_t>> expected = {{1, 1}, {2, 2}, {3, 4}, {5, 8}, {9, 16}, {17, 20}};
  REQUIRE(ranges == expected);
  REQUIRE(doubling_ranges(1) == std::vector<std::pair<int64_t, int64_t>>{{1, 1}});
}

TEST_CASE("ftbc-auto: chooses on the held-out images, and at step 1 no candidate alone does better there", "[ftbc]") {
  std::mt19937 rng(48);
  const Tensor calib = random_tensor({400, 2, 8, 8}, rng, 0.0f, 1.0f);
  Network net = max_norm_network(rng, calib, /*residual=*/true, 0.0f);
  Dataset train = ann_labelled(net, calib);
  CpuBackend cpu(2);
  CalibrationOptions o = options(8, 2, 64);
  Network chosen = net;
  const CalibrationReport r = make_calibrator("ftbc-auto")->calibrate(chosen, cpu, train, o);
  INFO("choices: " << r.parameters.at("choices") << "; held-out accuracy: " << r.parameters.at("held_out_accuracy"));
  REQUIRE(r.method == "ftbc-auto");
  REQUIRE(r.parameters.at("held_out_images") == std::to_string(400 - 2 * 64));
  // Evaluated on those held-out images, the assembled bias is at least as good at every range's end
  // step as each candidate alone (the greedy choice keeps earlier steps; ties go to the first).
  const auto held = held_out_indices(o, train.size(), 400 - 2 * 64);
  const Dataset h = dataset_subset(train, held, "held out");
  SweepOptions so;
  so.sim.timesteps = 8;
  so.with_ann = false;
  const SweepResult mine = run_sweep(cpu, chosen, h, so);
  REQUIRE(chosen.neuron(chosen.neuron_nodes()[0]).bias_steps() == 8);
  // The candidates run on the thresholds ftbc-auto chose (its first decision, checked below).
  Network rethresholded = net;
  for (int i : net.neuron_nodes()) rethresholded.neuron(i).set_threshold(chosen.neuron(i).threshold());
  for (const char* method : {"ftbc", "ftbc-paper", "ftbc-exact"}) {
    Network c = rethresholded;
    make_calibrator(method)->calibrate(c, cpu, train, o);
    const SweepResult theirs = run_sweep(cpu, c, h, so);
    // The first range is a single step with the same rows before it: no worse, exactly.
    INFO(method << ": t=1 " << theirs.accuracy[0] << " vs " << mine.accuracy[0]);
    REQUIRE(mine.accuracy[0] >= theirs.accuracy[0]);
  }
}

TEST_CASE("ftbc-auto: ReLU thresholds for T chosen on the held-out images", "[ftbc]") {
  std::mt19937 rng(5);
  const Tensor calib = random_tensor({400, 2, 8, 8}, rng, 0.0f, 1.0f);
  // Max-norm thresholds are far too high for T = 4: least error for T should win on held-out images.
  Network net = max_norm_network(rng, calib, /*residual=*/true);
  Dataset train = ann_labelled(net, calib);
  CpuBackend cpu(2);
  const CalibrationOptions o = options(4, 2, 64);
  Network chosen = net;
  const CalibrationReport r = make_calibrator("ftbc-auto")->calibrate(chosen, cpu, train, o);
  const std::string scores = r.parameters.at("thresholds_held_out_score");
  INFO("thresholds: " << r.parameters.at("thresholds") << "; held-out: " << scores);
  // The least-error thresholds, computed here from the fit images alone (the calibration batches).
  const Dataset fit = dataset_subset(train, calibration_indices(o, train.size()), "fit");
  Network least_error = net;
  NormOptions no;
  no.method = NormMethod::MinError;
  no.timesteps = 4;
  set_thresholds(least_error, cpu, fit, no);
  // The report's two scores, and the choice follows the better one.
  const auto number_after = [&](const std::string& key) { return std::stod(scores.substr(scores.find(key) + key.size())); };
  const double converted = number_after("as converted "), fitted = number_after("least error for T=4 ");
  REQUIRE(r.parameters.at("thresholds") == (fitted > converted ? "least error for T=4" : "as converted"));
  REQUIRE(fitted > converted);  // max norm at T = 4 leaves the network nearly silent
  for (int i : net.neuron_nodes()) {
    INFO(net.layer(i).name());
    REQUIRE(chosen.neuron(i).threshold() == least_error.neuron(i).threshold());
    REQUIRE(chosen.neuron(i).threshold()[0] < net.neuron(i).threshold()[0]);
  }
}

TEST_CASE("FTBC raises accuracy at low T on unseen images", "[ftbc]") {
  std::mt19937 rng(41);
  const Tensor calib = random_tensor({256, 2, 8, 8}, rng, 0.0f, 1.0f);
  for (bool residual : {false, true}) {
    // Membrane starting at 0 (a common converter default): the SNN lags the ANN at low T.
    Network net = max_norm_network(rng, calib, residual, 0.0f);
    Dataset train = ann_labelled(net, calib);
    Dataset test = ann_labelled(net, random_tensor({300, 2, 8, 8}, rng, 0.0f, 1.0f));
    CpuBackend cpu(2);
    SweepOptions so;
    so.sim.timesteps = 8;
    so.with_ann = false;
    const SweepResult plain = run_sweep(cpu, net, test, so);
    Network calibrated = net;
    FtbcCalibrator().calibrate(calibrated, cpu, train, options(8, 2, 128));
    const SweepResult ftbc = run_sweep(cpu, calibrated, test, so);
    INFO("residual " << residual << ": agreement with the ANN at T=4, uncalibrated " << plain.accuracy[3]
                     << " %, FTBC " << ftbc.accuracy[3] << " %");
    // Measured: 28 -> 53 % (plain), 76 -> 79 % (residual: its uncalibrated agreement is already high).
    REQUIRE(ftbc.accuracy[3] > plain.accuracy[3] + (residual ? 2.0 : 10.0));
    REQUIRE(ftbc.accuracy[7] >= plain.accuracy[7]);
  }
}

TEST_CASE("FTBC is causal: a calibration for T = 8 is the first 8 rows of one for T = 32", "[ftbc]") {
  std::mt19937 rng(42);
  const Tensor images = random_tensor({96, 2, 8, 8}, rng, 0.0f, 1.0f);
  Network base = max_norm_network(rng, images);
  Dataset d = ann_labelled(base, images);
  CpuBackend cpu(2);
  for (const std::string variant : {"fixed", "paper", "exact"}) {
    Network n8 = base, n32 = base;
    CalibrationOptions o8 = options(8, 3, 32), o32 = options(32, 3, 32);
    o8.variant = o32.variant = variant;
    o8.seed = o32.seed = 5;
    FtbcCalibrator().calibrate(n8, cpu, d, o8);
    FtbcCalibrator().calibrate(n32, cpu, d, o32);
    for (int node : base.neuron_nodes()) {
      const Tensor& b8 = n8.neuron(node).bias();
      const Tensor& b32 = n32.neuron(node).bias();
      REQUIRE(b8.dim(0) == 8);
      REQUIRE(b32.dim(0) == 32);
      const Tensor head = b32.slice0(0, 8);
      INFO("variant " << variant << ", layer " << base.layer(node).name());
      REQUIRE(max_abs_diff(head, b8) < 1e-6f);
    }
  }
}

TEST_CASE("FTBC does not depend on how the engine chunks time", "[ftbc]") {
  std::mt19937 rng(47);
  const Tensor images = random_tensor({48, 2, 8, 8}, rng, 0.0f, 1.0f);
  Network base = max_norm_network(rng, images, /*residual=*/true);
  Dataset d = ann_labelled(base, images);
  CpuBackend cpu(2);
  for (const std::string variant : {"fixed", "paper", "exact"}) {
    Network whole = base, chunked = base;
    CalibrationOptions o = options(10, 2, 24);
    o.variant = variant;
    FtbcCalibrator().calibrate(whole, cpu, d, o);
    o.max_chunk_steps = 3;  // the probe then sees steps 0-2, 3-5, 6-8, 9 separately
    FtbcCalibrator().calibrate(chunked, cpu, d, o);
    for (int node : base.neuron_nodes()) {
      INFO("variant " << variant << ", layer " << base.layer(node).name());
      REQUIRE(max_abs_diff(whole.neuron(node).bias(), chunked.neuron(node).bias()) < 1e-6f);
    }
  }
}

TEST_CASE("FTBC variants differ and are recorded", "[ftbc]") {
  std::mt19937 rng(43);
  const Tensor images = random_tensor({64, 2, 8, 8}, rng, 0.0f, 1.0f);
  Network base = max_norm_network(rng, images);
  Dataset d = ann_labelled(base, images);
  CpuBackend cpu(2);
  Network fixed = base, paper = base;
  const CalibrationReport rf = make_calibrator("ftbc")->calibrate(fixed, cpu, d, options(4, 1, 64));
  const CalibrationReport rp = make_calibrator("ftbc-paper")->calibrate(paper, cpu, d, options(4, 1, 64));
  REQUIRE(rf.parameters.at("variant") == "fixed");
  REQUIRE(rp.parameters.at("variant") == "paper");
  const int first = base.neuron_nodes()[0];
  // The first layer sees the same input in both; the variants update it differently after step 1.
  REQUIRE(max_abs_diff(fixed.neuron(first).bias().slice0(0, 1), paper.neuron(first).bias().slice0(0, 1)) < 1e-6f);
  REQUIRE(max_abs_diff(fixed.neuron(first).bias(), paper.neuron(first).bias()) > 1e-4f);
  record_calibration(fixed, rf);
  REQUIRE(fixed.metadata().at("calibration") == "ftbc");
  REQUIRE(fixed.metadata().at("calibration.T") == "4");
  clear_calibration(fixed);
  REQUIRE(fixed.metadata().count("calibration") == 0);
  REQUIRE(fixed.neuron(first).bias_steps() == 0);
}

TEST_CASE("calibration rejects bad options with the option named", "[ftbc]") {
  std::mt19937 rng(44);
  const Tensor images = random_tensor({20, 2, 8, 8}, rng, 0.0f, 1.0f);
  Network net = max_norm_network(rng, images);
  Dataset d = ann_labelled(net, images);
  CpuBackend cpu(1);
  FtbcCalibrator ftbc;
  CalibrationOptions o = options(0, 1, 10);
  REQUIRE_THROWS_WITH(ftbc.calibrate(net, cpu, d, o), Catch::Contains("--T"));
  o = options(4, 1, 10);
  o.alpha = 0.0;
  REQUIRE_THROWS_WITH(ftbc.calibrate(net, cpu, d, o), Catch::Contains("--alpha"));
  o.alpha = -1.0;
  REQUIRE_THROWS_WITH(ftbc.calibrate(net, cpu, d, o), Catch::Contains("--alpha"));
  o = options(4, 3, 10);  // 30 images wanted, 20 available
  REQUIRE_THROWS_WITH(ftbc.calibrate(net, cpu, d, o), Catch::Contains("--batches") && Catch::Contains("20"));
  o = options(4, 1, 10);
  o.variant = "sideways";
  REQUIRE_THROWS_WITH(ftbc.calibrate(net, cpu, d, o), Catch::Contains("sideways"));
  REQUIRE_THROWS_WITH(make_calibrator("magic"), Catch::Contains("magic") && Catch::Contains("ftbc"));
}

TEST_CASE("light calibration: a constant bias that matches the mean rate over T", "[ftbc]") {
  std::mt19937 rng(45);
  const Tensor images = random_tensor({64, 2, 8, 8}, rng, 0.0f, 1.0f);
  Network net = max_norm_network(rng, images);
  Dataset d = ann_labelled(net, images);
  CpuBackend cpu(2);
  make_calibrator("light")->calibrate(net, cpu, d, options(16, 1, 64, 3));
  for (int node : net.neuron_nodes()) {
    REQUIRE(net.neuron(node).bias_constant());
    REQUIRE(net.neuron(node).bias_steps() == 1);
  }
  // The mean rate over T (not each step) now matches: check the first layer, per channel.
  std::vector<Tensor> ann;
  cpu.forward_ann(net, images, &ann);
  LayerMeans h;
  SimulationOptions o;
  o.timesteps = 16;
  auto program = cpu.prepare(net);
  cpu.simulate(*program, images, o, &h);
  const int first = net.neuron_nodes()[0];
  const int64_t C = net.neuron(first).channels(), inner = ann[size_t(first)].numel() / (64 * C);
  for (int64_t c = 0; c < C; ++c) {
    double a = 0, s = 0;
    for (int64_t b = 0; b < 64; ++b)
      for (int64_t i = 0; i < inner; ++i) a += ann[size_t(first)][(b * C + c) * inner + i];
    for (int64_t t = 0; t < 16; ++t) s += h.spikes[first][size_t(t)][size_t(c)];
    a /= double(64 * inner);
    s /= 16.0;
    REQUIRE(std::fabs(s - a) < 0.03 * net.neuron(first).theta(c));
  }
}

TEST_CASE("rts shift: membrane from 0 plus θ/2T per step, as a bias", "[ftbc]") {
  std::mt19937 rng(46);
  Network net = snn_test::small_cnn(rng);
  CpuBackend cpu(1);
  make_calibrator("rts")->calibrate(net, cpu, Dataset(), options(4, 1, 1));
  const NeuronLayer& n = net.neuron(net.neuron_nodes()[1]);
  for (int64_t c = 0; c < n.channels(); ++c) {
    REQUIRE(n.bias_at(0, c) == Approx(-n.theta(c) / 8 + 0.5f * n.theta(c)));
    REQUIRE(n.bias_at(3, c) == Approx(-n.theta(c) / 8));
  }
}
