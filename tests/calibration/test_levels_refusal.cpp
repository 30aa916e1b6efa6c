// "levels" at a T smaller than a layer's QCFS levels would leave that layer as it is while labelling the
// model "levels": it refuses, naming --T, the layer and L, and leaves the network untouched.
#include <catch2/catch.hpp>

#include "snn/conversion/calibration.hpp"
#include "snn/conversion/levels_calibration.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "test_util.hpp"

using namespace snn;
using namespace snn::conversion;
using Catch::Contains;

TEST_CASE("levels refuses T < L and changes nothing", "[levels]") {
  std::mt19937 rng(36);
  Network net = snn_test::small_cnn(rng, SourceActivation::QCFS, 8);
  for (int i : net.neuron_nodes()) {
    NeuronConfig cfg = net.neuron(i).config();
    cfg.spikes = Spikes::Signed;
    net.neuron(i).set_config(cfg);
  }
  const std::string before = net.layer(net.neuron_nodes()[0]).summary();
  CpuBackend cpu(1);
  CalibrationOptions o;
  o.timesteps = 4;
  REQUIRE_THROWS_WITH(make_calibrator("levels")->calibrate(net, cpu, Dataset{}, o),
                      Contains("--T 4") && Contains("L = 8") && Contains("layer '"));
  REQUIRE(net.layer(net.neuron_nodes()[0]).summary() == before);
  REQUIRE_THROWS_AS(require_levels_fit(net, 7), Error);
  REQUIRE_NOTHROW(require_levels_fit(net, 8));
  o.timesteps = 8;
  REQUIRE(make_calibrator("levels")->calibrate(net, cpu, Dataset{}, o).parameters.at("layers_spread") == "2");
}
