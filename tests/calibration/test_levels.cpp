// Signed neurons in calibration: "levels" reproduces a QCFS network at t = T ≥ L, and ftbc-auto's
// bias-free candidates ("none", "cancel") for signed networks.
#include <catch2/catch.hpp>
#include <cmath>

#include "snn/conversion/calibration.hpp"
#include "snn/conversion/levels_calibration.hpp"
#include "snn/conversion/thresholds.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "test_util.hpp"

using namespace snn;
using namespace snn::conversion;
using snn_test::ann_labelled;
using snn_test::random_tensor;

namespace {

Network with_spikes(Network net, Spikes spikes) {
  for (int i : net.neuron_nodes()) {
    NeuronConfig cfg = net.neuron(i).config();
    cfg.spikes = spikes;
    net.neuron(i).set_config(cfg);
  }
  return net;
}

// Samples whose SNN readout, averaged over T steps, equals the ANN's logits (to float summation order)
// and whose prediction at t = T is the ANN's.
struct Agreement {
  int64_t logits = 0, predictions = 0;
};
Agreement agreement(const Network& net, const Tensor& images, int64_t T) {
  CpuBackend cpu(2);
  const Tensor logits = cpu.forward_ann(net, images);
  SimulationOptions o;
  o.timesteps = T;
  const BatchSimulation sim = cpu.simulate(net, images, o);
  const int64_t B = images.dim(0), K = logits.dim(1);
  Agreement a;
  for (int64_t b = 0; b < B; ++b) {
    bool close = true;
    int64_t best = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double z = logits[b * K + k], r = double(sim.readout[b * K + k]) / double(T);
      close = close && std::fabs(r - z) <= 1e-4 * (1.0 + std::fabs(z));
      if (logits[b * K + k] > logits[b * K + best]) best = k;
    }
    a.logits += close;
    a.predictions += sim.predictions[size_t((T - 1) * B + b)] == int32_t(best);
  }
  return a;
}

CalibrationOptions for_T(int64_t T) {
  CalibrationOptions o;
  o.timesteps = T;
  return o;
}

}  // namespace

TEST_CASE("levels: a signed QCFS network equals its CNN at t = T for every T >= L", "[levels]") {
  std::mt19937 rng(81);
  const int levels = 4;
  const Network net = with_spikes(snn_test::small_cnn(rng, SourceActivation::QCFS, levels), Spikes::Signed);
  const Tensor images = random_tensor({96, 2, 8, 8}, rng, 0.0f, 1.0f);
  CpuBackend cpu(2);
  for (int64_t T : {4, 8, 12, 32}) {
    Network spread = net;
    const CalibrationReport r = make_calibrator("levels")->calibrate(spread, cpu, Dataset{}, for_T(T));
    REQUIRE(r.parameters.at("layers_spread") == "2");
    for (int i : spread.neuron_nodes()) {
      REQUIRE(spread.neuron(i).config().max_spikes == float(levels));
      REQUIRE(spread.neuron(i).spike_threshold(0) == spread.neuron(i).theta(0) * float(T) / float(levels));
    }
    const Agreement a = agreement(spread, images, T);
    INFO("T = " << T << ": logits equal on " << a.logits << ", predictions on " << a.predictions << " of 96");
    REQUIRE(a.logits >= 90);  // a neuron whose input jumps by more than θ' in one step may lag
    REQUIRE(a.predictions >= 94);
    if (T > levels) {
      // Without the spread, T steps carry T levels, not the CNN's L: the network is another one.
      const Agreement plain = agreement(net, images, T);
      INFO("unspread: logits equal on " << plain.logits);
      REQUIRE(plain.logits < a.logits / 2);
    }
  }
  // clear_calibration undoes it.
  Network spread = net;
  spread_levels_over_steps(spread, 8);
  clear_calibration(spread);
  for (int i : spread.neuron_nodes()) {
    REQUIRE(spread.neuron(i).config().threshold_scale == 1.0f);
    REQUIRE(spread.neuron(i).config().max_spikes == NeuronConfig::kNoSpikeCap);
  }
}

TEST_CASE("levels: T < L leaves a layer as it is, and binary or ReLU networks are refused", "[levels]") {
  std::mt19937 rng(82);
  Network net = with_spikes(snn_test::small_cnn(rng, SourceActivation::QCFS, 8), Spikes::Signed);
  REQUIRE(spread_levels_over_steps(net, 4) == 0);
  for (int i : net.neuron_nodes()) REQUIRE(net.neuron(i).config().threshold_scale == 1.0f);
  Network binary = snn_test::small_cnn(rng, SourceActivation::QCFS, 8);
  REQUIRE_THROWS_WITH(spread_levels_over_steps(binary, 8),
                      Catch::Contains("act1") && Catch::Contains("--spikes signed"));
  Network relu = with_spikes(snn_test::small_cnn(rng), Spikes::Signed);
  REQUIRE_THROWS_WITH(spread_levels_over_steps(relu, 8), Catch::Contains("no QCFS layers"));
}

TEST_CASE("ftbc-auto: signed networks also try each range without a fitted bias", "[levels][ftbc]") {
  std::mt19937 rng(83);
  const Tensor images = random_tensor({300, 2, 8, 8}, rng, 0.0f, 1.0f);
  CpuBackend cpu(2);
  CalibrationOptions o = for_T(4);
  o.batches = 2;
  o.batch_size = 64;
  for (Spikes spikes : {Spikes::Binary, Spikes::Signed}) {
    Network net = with_spikes(snn_test::small_cnn(rng, SourceActivation::QCFS, 4), spikes);
    const Dataset d = ann_labelled(net, images);
    const CalibrationReport r = make_calibrator("ftbc-auto")->calibrate(net, cpu, d, o);
    const std::string scores = r.parameters.at("held_out_accuracy");
    INFO(to_string(spikes) << ": " << scores << "; choices " << r.parameters.at("choices"));
    const bool bias_free = scores.find(" none ") != std::string::npos && scores.find(" cancel ") != std::string::npos;
    REQUIRE(bias_free == (spikes == Spikes::Signed));
    // T = L: a signed QCFS network may be its CNN at t = T with no bias at all; the held-out images at
    // t = T decide, and the report says how.
    REQUIRE(r.parameters.count("final_choice") == (spikes == Spikes::Signed ? 1u : 0u));
    if (spikes == Spikes::Signed) {
      const std::string& fc = r.parameters.at("final_choice");
      INFO("final choice: " << fc);
      const auto number_after = [&](const std::string& key) { return std::stod(fc.substr(fc.find(key) + key.size())); };
      const double levels = number_after(" levels "), ranges = number_after(" ranges ");
      REQUIRE(fc.rfind(levels > ranges ? "levels" : "ranges", 0) == 0);
      for (int i : net.neuron_nodes()) REQUIRE(net.neuron(i).bias().empty() == (levels > ranges));
    }
    // "cancel" rows take back the earlier rows' sum: where it was chosen, the bias sums to zero there.
    if (r.parameters.at("choices").find("t3-4 cancel") != std::string::npos)
      for (int i : net.neuron_nodes()) {
        const Tensor& b = net.neuron(i).bias();
        for (int64_t c = 0; c < net.neuron(i).channels(); ++c) {
          double sum = 0;
          for (int64_t t = 0; t < 4; ++t) sum += b[t * net.neuron(i).channels() + c];
          REQUIRE(std::fabs(sum) < 1e-5);
        }
      }
  }
}

TEST_CASE("spike scales for T < L: least quantisation error of the CNN's QCFS outputs in T steps", "[levels]") {
  std::mt19937 rng(84);
  const Tensor images = random_tensor({64, 2, 8, 8}, rng, 0.0f, 1.0f);
  Dataset d;
  d.images = images;
  d.labels.assign(64, 0);
  d.num_classes = 10;
  CpuBackend cpu(2);
  NormOptions no;
  no.timesteps = 2;
  no.max_images = 0;
  Network binary = snn_test::small_cnn(rng, SourceActivation::QCFS, 8);
  REQUIRE(set_spike_scales_for_steps(binary, cpu, d, no).empty());  // binary neurons have no scale
  Network net = with_spikes(binary, Spikes::Signed);
  const Network before = net;
  REQUIRE(set_spike_scales_for_steps(net, cpu, d, no) == std::vector<std::string>{"act1", "act2"});
  // The direct computation: the positive QCFS outputs of each layer, and their least-error θ for T = 2.
  std::vector<Tensor> outs;
  cpu.forward_ann(before, images, &outs);
  for (int i : net.neuron_nodes()) {
    std::vector<float> positive;
    for (float v : outs[size_t(i)].values())
      if (v > 0.0f) positive.push_back(v);
    const double theta_T = min_error_threshold(positive, 2, 0.5);
    INFO(net.layer(i).name() << ": θ_T " << theta_T);
    REQUIRE(net.neuron(i).config().threshold_scale == float(theta_T / double(before.neuron(i).theta(0))));
    REQUIRE(net.neuron(i).threshold() == before.neuron(i).threshold());  // the ANN view is untouched
  }
  REQUIRE(cpu.forward_ann(net, images).values() == cpu.forward_ann(before, images).values());
  no.timesteps = 8;  // T = L: nothing to fit
  REQUIRE(set_spike_scales_for_steps(net, cpu, d, no).empty());
}

TEST_CASE("ftbc-auto: for T > L a signed QCFS network ends as its CNN at t = T", "[levels][ftbc]") {
  std::mt19937 rng(85);
  const Tensor images = random_tensor({300, 2, 8, 8}, rng, 0.0f, 1.0f);
  CpuBackend cpu(2);
  CalibrationOptions o = for_T(12);
  o.batches = 2;
  o.batch_size = 64;
  Network net = with_spikes(snn_test::small_cnn(rng, SourceActivation::QCFS, 4), Spikes::Signed);
  const Dataset d = ann_labelled(net, images);
  const CalibrationReport r = make_calibrator("ftbc-auto")->calibrate(net, cpu, d, o);
  const std::string& fc = r.parameters.at("final_choice");
  INFO("final choice: " << fc << "; choices " << r.parameters.at("choices"));
  // The labels are the CNN's own predictions: the spread network gets every held-out image right.
  // The labels are the CNN's own predictions: the spread network gets every held-out image right, and
  // the range-by-range bias (12 levels from 12 steps, not the CNN's 4) does not.
  REQUIRE(fc.find("levels 100.00") != std::string::npos);
  REQUIRE(fc.rfind("levels", 0) == 0);
  REQUIRE(r.parameters.at("choices").rfind("levels", 0) == 0);
  for (int i : net.neuron_nodes()) {
    REQUIRE(net.neuron(i).config().max_spikes == 4.0f);
    REQUIRE(net.neuron(i).bias().empty());
  }
  REQUIRE(agreement(net, images, 12).predictions >= 295);
}
