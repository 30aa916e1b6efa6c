// *.snn.h5 round trip and the errors for damaged files.
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "snn/error.hpp"
#include "snn/model_file.hpp"
#include "test_util.hpp"

using namespace snn;
namespace fs = std::filesystem;

namespace {
Network calibrated_network() {
  std::mt19937 rng(20);
  Network net = snn_test::small_cnn(rng, SourceActivation::QCFS, 8, true, true);
  net.set_preprocessing({{0.25f, 0.5f}, {0.3f, 0.4f}});
  net.neuron(net.neuron_nodes()[0]).set_bias(snn_test::random_tensor({5, 4}, rng));
  NeuronConfig cfg;
  cfg.model = NeuronModel::LIF;
  cfg.beta = 0.9f;
  cfg.reset = Reset::Zero;
  cfg.v_init = 0.25f;
  net.neuron(net.neuron_nodes()[1]).set_config(cfg);
  net.metadata()["source"] = "unit test";
  return net;
}
}  // namespace

TEST_CASE("model file round trip is bit-identical", "[model_file]") {
  const Network net = calibrated_network();
  const std::string path = snn_test::temp_path("roundtrip.snn.h5");
  save_network(net, path);
  const Network back = load_network(path);
  REQUIRE(back.size() == net.size());
  REQUIRE(back.input_shape() == net.input_shape());
  REQUIRE(back.preprocessing().mean == net.preprocessing().mean);
  REQUIRE(back.preprocessing().std == net.preprocessing().std);
  REQUIRE(back.metadata() == net.metadata());
  for (int i = 0; i < net.size(); ++i) {
    REQUIRE(back.inputs(i) == net.inputs(i));
    const LayerRecord a = net.layer(i).to_record(), b = back.layer(i).to_record();
    REQUIRE(a.type == b.type);
    REQUIRE(a.name == b.name);
    REQUIRE(a.numbers == b.numbers);
    REQUIRE(a.strings == b.strings);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& [k, t] : a.tensors) {
      REQUIRE(b.tensors.at(k).shape() == t.shape());
      REQUIRE(b.tensors.at(k).values() == t.values());  // bit-identical floats
    }
  }
  // No temporary files left beside the model.
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    REQUIRE(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("damaged model files give clear errors", "[model_file]") {
  const Network net = calibrated_network();
  const std::string good = snn_test::temp_path("good.snn.h5");
  save_network(net, good);

  SECTION("truncated file") {
    const std::string bad = snn_test::temp_path("truncated.snn.h5");
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(bad, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("truncated.snn.h5"));
  }
  SECTION("not HDF5 at all") {
    const std::string bad = snn_test::temp_path("text.snn.h5");
    std::ofstream(bad) << "hello";
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("text.snn.h5") && Catch::Contains("not an HDF5"));
  }
  SECTION("missing file") {
    REQUIRE_THROWS_WITH(load_network(snn_test::temp_path("nope.snn.h5")), Catch::Contains("not found"));
  }
  SECTION("wrong format version") {
    const std::string bad = snn_test::temp_path("version.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      f.removeAttr("format_version");
      int64_t v = 99;
      f.createAttribute("format_version", H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR))
          .write(H5::PredType::NATIVE_INT64, &v);
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("version 99") && Catch::Contains("version.snn.h5"));
  }
  SECTION("weight with the wrong shape") {
    const std::string bad = snn_test::temp_path("shape.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      H5::Group g = f.openGroup("layers/0000");
      g.unlink("weight");
      hsize_t dims[4] = {4, 2, 2, 2};
      std::vector<float> zeros(32, 0.0f);
      g.createDataSet("weight", H5::PredType::NATIVE_FLOAT, H5::DataSpace(4, dims))
          .write(zeros.data(), H5::PredType::NATIVE_FLOAT);
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("conv1") && Catch::Contains("weight shape"));
  }
  SECTION("unknown layer type") {
    const std::string bad = snn_test::temp_path("type.snn.h5");
    fs::copy_file(good, bad, fs::copy_options::overwrite_existing);
    {
      H5::H5File f(bad, H5F_ACC_RDWR);
      H5::Group g = f.openGroup("layers/0001");
      g.removeAttr("type");
      H5::StrType st(H5::PredType::C_S1, 7);
      g.createAttribute("type", st, H5::DataSpace(H5S_SCALAR)).write(st, std::string("mystery"));
    }
    REQUIRE_THROWS_WITH(load_network(bad), Catch::Contains("mystery"));
  }
}

TEST_CASE("saving into a missing directory fails and leaves nothing", "[model_file]") {
  const Network net = calibrated_network();
  REQUIRE_THROWS_WITH(save_network(net, snn_test::temp_path("no_such_dir/x.snn.h5")), Catch::Contains("does not exist"));
}
