// NIR export (snn/nir_export.hpp) on hand-built networks: the layout NIR's reader expects, and refusals
// that name the layer and leave no file. tests/nir/ checks a converted ResNet end to end (h5py, PyTorch).
#include <H5Cpp.h>
#include <catch2/catch.hpp>
#include <filesystem>

#include "snn/error.hpp"
#include "snn/layers/all.hpp"
#include "snn/nir_export.hpp"
#include "test_util.hpp"

using namespace snn;
using snn_test::random_tensor;

namespace {
std::string temp_path(const std::string& name) { return std::string(SNN_BINARY_DIR) + "/test_tmp_" + name; }

Network spiking_mlp(std::mt19937& rng, Reset reset, float v_init) {
  Network net({1, 4, 4});
  net.add(std::make_unique<Flatten>("flat"));
  net.add(std::make_unique<Linear>("fc1", random_tensor({8, 16}, rng), random_tensor({8}, rng)));
  NeuronConfig cfg;
  cfg.reset = reset;
  cfg.v_init = v_init;
  net.add(std::make_unique<NeuronLayer>("act", 8, std::vector<float>{0.7f}, SourceActivation::ReLU, 0, cfg));
  net.add(std::make_unique<Linear>("fc2", random_tensor({3, 8}, rng), random_tensor({3}, rng)));
  return net;
}

std::string read_type(const H5::H5File& f, const std::string& node) {
  H5::DataSet ds = f.openDataSet("/node/nodes/" + node + "/type");
  std::string s;
  ds.read(s, ds.getStrType());
  return s;
}
}  // namespace

TEST_CASE("NIR export writes NIR's layout: graph, typed nodes, neuron then amplitude, edges", "[nir]") {
  std::mt19937 rng(81);
  const Network net = spiking_mlp(rng, Reset::Zero, 0.0f);
  const std::string path = temp_path("mlp.nir");
  const NirExportReport r = export_nir(net, path);
  CHECK(r.nodes == 7);  // input, flat, fc1, act, act.amplitude, fc2, output
  CHECK(r.edges == 6);
  H5::H5File f(path, H5F_ACC_RDONLY);
  CHECK(read_type(f, "n0_flat") == "Flatten");
  CHECK(read_type(f, "n1_fc1") == "Affine");
  CHECK(read_type(f, "n2_act") == "IF");
  CHECK(read_type(f, "n2_act.amplitude") == "Scale");
  CHECK(read_type(f, "output") == "Output");
  float theta[8];
  f.openDataSet("/node/nodes/n2_act/v_threshold").read(theta, H5::PredType::NATIVE_FLOAT);
  CHECK(theta[0] == 0.7f);
  CHECK(theta[7] == 0.7f);
}

TEST_CASE("NIR export refuses what NIR cannot express, naming the layer, writing nothing", "[nir]") {
  std::mt19937 rng(82);
  const std::string path = temp_path("refused.nir");
  std::filesystem::remove(path);
  auto refused = [&](const Network& net, const std::string& words) {
    try {
      export_nir(net, path);
      FAIL("exported");
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
    CHECK(!std::filesystem::exists(path));
  };
  refused(spiking_mlp(rng, Reset::Subtract, 0.0f), "layer 'act' (neuron) resets by subtraction");
  refused(spiking_mlp(rng, Reset::Zero, 0.5f), "layer 'act' (neuron) starts its membrane");
  Network pooled({2, 4, 4});
  pooled.add(std::make_unique<Conv2d>("conv", Conv2dSpec{2, 3, 3, 3, 1, 1, 1, 1, 1}, random_tensor({3, 2, 3, 3}, rng),
                                      random_tensor({3}, rng)));
  pooled.add(std::make_unique<MaxPool2d>("pool", PoolSpec{2, 2, 2, 2, 0, 0}));
  pooled.add(std::make_unique<Flatten>("flat"));
  pooled.add(std::make_unique<Linear>("fc", random_tensor({2, 12}, rng), random_tensor({2}, rng)));
  refused(pooled, "layer 'pool' (maxpool2d)");
  Network calibrated = spiking_mlp(rng, Reset::Zero, 0.0f);
  calibrated.neuron(2).set_bias(random_tensor({4, 8}, rng));
  refused(calibrated, "per-step calibration biases");
  NirExportOptions mean;
  mean.mean_bias = true;
  CHECK(export_nir(calibrated, path, mean).approximations.size() == 1);
}
