// Every numeric field of a model file in its range, named on load (snn/model_fields.hpp).
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "snn/error.hpp"
#include "snn/model_fields.hpp"
#include "snn/model_file.hpp"
#include "test_util.hpp"

using namespace snn;
using Catch::Contains;

namespace {
LayerRecord neuron_record() {
  std::mt19937 rng(38);
  const Network net = snn_test::small_cnn(rng);
  return net.layer(net.neuron_nodes()[0]).to_record();
}

LayerRecord linear_record(Shape weight, int64_t bias) {
  LayerRecord r;
  r.type = "linear";
  r.name = "fc";
  r.tensors["weight"] = Tensor(weight, std::vector<float>(size_t(numel_of(weight)), 0.5f));
  if (bias >= 0) r.tensors["bias"] = Tensor({bias}, std::vector<float>(size_t(bias), 0.1f));
  return r;
}

// Rewrites one layer number attribute in a saved model and removes the digest the edit invalidates.
void poke_number(const std::string& path, int layer, const std::string& key, double value) {
  H5::H5File f(path, H5F_ACC_RDWR);
  char group[16];
  std::snprintf(group, sizeof group, "layers/%04d", layer);
  H5::Group g = f.openGroup(group);
  g.removeAttr("n:" + key);
  g.createAttribute("n:" + key, H5::PredType::NATIVE_DOUBLE, H5::DataSpace()).write(H5::PredType::NATIVE_DOUBLE, &value);
  g.removeAttr("crc32");
}
}  // namespace

TEST_CASE("neuron fields out of range are named", "[model_fields]") {
  const LayerRecord good = neuron_record();
  REQUIRE_NOTHROW(check_record_fields(good));
  const std::pair<const char*, double> bad[] = {{"v_init", 1e30},      {"v_init", -0.5},     {"beta", 0.0},
                                                {"beta", 7.0},         {"levels", 1e9},      {"channels", 0.0},
                                                {"channels", 2.5},     {"bias_constant", 3}, {"max_spikes", 0.0},
                                                {"threshold_scale", -1}};
  for (const auto& [key, value] : bad) {
    LayerRecord r = good;
    r.numbers[key] = value;
    INFO(key << " = " << value);
    REQUIRE_THROWS_WITH(check_record_fields(r), Contains("layer '" + good.name + "' (neuron)") &&
                                                    Contains("field '" + std::string(key) + "'"));
  }
}

TEST_CASE("an empty bias and a transposed weight are named as such", "[model_fields]") {
  REQUIRE_NOTHROW(check_record_fields(linear_record({10, 784}, 10)));
  REQUIRE_NOTHROW(check_record_fields(linear_record({10, 784}, -1)));  // no bias at all
  REQUIRE_THROWS_WITH(check_record_fields(linear_record({10, 784}, 0)), Contains("'bias' is empty"));
  REQUIRE_THROWS_WITH(check_record_fields(linear_record({784, 10}, 10)),
                      Contains("layer 'fc' (linear)") && Contains("field 'weight'") && Contains("transposed") &&
                          Contains("[10, 784]"));
  // Without a bias the input's size tells.
  REQUIRE_NOTHROW(check_linear_input(linear_record({10, 784}, -1), 784));
  REQUIRE_THROWS_WITH(check_linear_input(linear_record({784, 10}, -1), 784),
                      Contains("field 'weight'") && Contains("transposed"));
}

TEST_CASE("load refuses a model whose fields were edited out of range, naming layer and field",
          "[model_fields][model_file]") {
  std::mt19937 rng(39);
  const Network net = snn_test::small_cnn(rng);
  const int node = net.neuron_nodes()[0];
  const std::string path = snn_test::temp_path("fields.snn.h5");
  save_network(net, path);
  poke_number(path, node, "v_init", 1e30);
  REQUIRE_THROWS_WITH(load_network(path), Contains(net.layer(node).name()) && Contains("v_init"));
  save_network(net, path);
  {
    H5::H5File f(path, H5F_ACC_RDWR);
    f.removeAttr("format_version");
    const double v = 2.5;
    f.createAttribute("format_version", H5::PredType::NATIVE_DOUBLE, H5::DataSpace())
        .write(H5::PredType::NATIVE_DOUBLE, &v);
  }
  REQUIRE_THROWS_WITH(load_network(path), Contains("format_version") && Contains("2.5"));
}

TEST_CASE("preprocessing fields must be finite and std positive", "[model_fields]") {
  REQUIRE_NOTHROW(check_preprocessing_fields({{0.5f}, {0.25f}}));
  REQUIRE_THROWS_WITH(check_preprocessing_fields({{std::nanf("")}, {0.25f}}), Contains("'mean'"));
  REQUIRE_THROWS_WITH(check_preprocessing_fields({{0.5f}, {0.0f}}), Contains("'std'"));
}
