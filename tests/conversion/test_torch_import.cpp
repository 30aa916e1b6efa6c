// The TorchScript importer on the fixtures of tests/fixtures (see fixtures.json / README.md): the ANN
// view of every imported model must agree with LibTorch's own forward of the same file (max abs logit
// difference < 1e-4 on random N(0,1) inputs), and the error fixtures must fail with a clear message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "import_test_util.hpp"
#include "snn/conversion/torch_import.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "snn/layers/all.hpp"

using namespace snn;
using namespace snn::conversion;

namespace {

const std::string kFixtures = std::string(SNN_TEST_DIR) + "/fixtures/";

const nlohmann::json& fixtures() {
  static const nlohmann::json j = [] {
    std::ifstream f(kFixtures + "fixtures.json");
    if (!f) throw std::runtime_error("cannot open " + kFixtures + "fixtures.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

const nlohmann::json& fixture(const std::string& file) {
  for (const auto& e : fixtures()["fixtures"])
    if (e["file"] == file) return e;
  throw std::runtime_error("fixture " + file + " is not listed in fixtures.json");
}

Shape shape_of(const nlohmann::json& e) { return e["input_shape"].get<Shape>(); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

Tensor randn(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = n(rng);
  return t;
}

template <class L>
int count_layers(const Network& net) {
  int n = 0;
  for (int i = 0; i < net.size(); ++i) n += dynamic_cast<const L*>(&net.layer(i)) != nullptr;
  return n;
}

// Imports a fixture, checks it against LibTorch and against what fixtures.json says it contains.
Network check_ok_fixture(const std::string& file, ImportReport* report_out = nullptr) {
  const auto& e = fixture(file);
  INFO("fixture " << file);
  ImportOptions opts;
  opts.input_shape = shape_of(e);
  ImportReport report;
  Network net = import_torchscript(kFixtures + file, opts, &report);

  Shape batch = {8};
  batch.insert(batch.end(), opts.input_shape.begin(), opts.input_shape.end());
  const Tensor x = randn(batch, 1234);
  CpuBackend cpu(1);
  const Tensor ours = cpu.forward_ann(net, x);
  const Tensor torch = torchscript_forward(kFixtures + file, x);
  REQUIRE(ours.shape() == torch.shape());
  REQUIRE(ours.shape() == Shape{8, e["num_classes"].get<int64_t>()});
  const float diff = max_abs_diff(ours, torch);
  INFO("max |ANN view - LibTorch| = " << diff);
  CHECK(diff < 1e-4f);

  CHECK(int(net.neuron_nodes().size()) == e["num_activations"].get<int>());
  CHECK(report.activations == e["num_activations"].get<int>());
  CHECK((count_layers<MaxPool2d>(net) > 0) == e["has_maxpool"].get<bool>());
  CHECK(report.max_pools == count_layers<MaxPool2d>(net));
  if (e.contains("num_adds")) CHECK(count_layers<Add>(net) == e["num_adds"].get<int>());
  CHECK(net.metadata().at("source_model") == kFixtures + file);
  if (report_out) *report_out = report;
  return net;
}

std::string import_error(const std::string& path, Shape shape = {1, 12, 12}) {
  return snn_test::import_error_message(path, std::move(shape));
}

}  // namespace

TEST_CASE("nn.Sequential, scripted and traced, matches LibTorch", "[import]") {
  ImportReport rs, rt;
  Network s = check_ok_fixture("seq_scripted.pt", &rs);
  Network t = check_ok_fixture("seq_traced.pt", &rt);
  CHECK(rs.batchnorms_folded == 2);
  CHECK(rt.batchnorms_folded == 2);
  CHECK(rs.relu_layers == 1);  // ReLU; ReLU6 is a clip
  // Layers are named after the module path; BN layers "1" and "4" are folded away.
  for (const Network* net : {&s, &t}) {
    CHECK(net->find("0") >= 0);
    CHECK(net->find("1") == -2);
    CHECK(net->find("8") == net->output_node());
    const NeuronLayer& relu6 = net->neuron(net->find("5"));
    CHECK(relu6.activation() == SourceActivation::Clip);
    CHECK(relu6.threshold() == std::vector<float>{6.0f});
    const NeuronLayer& relu = net->neuron(net->find("2"));
    CHECK(relu.activation() == SourceActivation::ReLU);
    CHECK(relu.threshold() == std::vector<float>{1.0f});  // provisional until set from data
  }
  CHECK(std::find(rs.ops.begin(), rs.ops.end(), "aten::conv2d") != rs.ops.end());
  CHECK(std::find(rt.ops.begin(), rt.ops.end(), "aten::_convolution") != rt.ops.end());
}

TEST_CASE("functional forward (F.relu, clamp, hardtanh, pooling, view, dropout) matches LibTorch", "[import]") {
  for (const char* file : {"functional_scripted.pt", "functional_traced.pt"}) {
    Network net = check_ok_fixture(file);
    int clips = 0;
    std::vector<float> clip_thetas;
    for (int i : net.neuron_nodes())
      if (net.neuron(i).activation() == SourceActivation::Clip) clip_thetas.push_back(net.neuron(i).threshold()[0]);
    CHECK(clip_thetas == std::vector<float>{2.5f, 3.0f});
    (void)clips;
  }
  check_ok_fixture("functional_gap_scripted.pt");
  check_ok_fixture("functional_gap_traced.pt");
}

TEST_CASE("residual network, scripted and traced, matches LibTorch", "[import]") {
  for (const char* file : {"resnet_scripted.pt", "resnet_traced.pt"}) {
    ImportReport r;
    Network net = check_ok_fixture(file, &r);
    CHECK(r.batchnorms_folded == 6);
    CHECK(net.find("layer1.conv1") >= 0);
    CHECK(net.find("layer2.shortcut.0") >= 0);
    CHECK(net.find("fc") == net.output_node());
    // The in-place `out += self.shortcut(x)` feeds relu2: the add must be its input.
    const int relu2 = net.find("layer2.relu2");
    REQUIRE(relu2 >= 0);
    CHECK(net.layer(net.inputs(relu2)[0]).type() == "add");
  }
}

TEST_CASE("QCFS and ClipFloor activations are read from the module: levels and threshold", "[import]") {
  for (const char* file : {"qcfs_scripted.pt", "clip_floor.pt"}) {
    INFO(file);
    Network net = check_ok_fixture(file);
    const auto& spec = fixture(file)["qcfs"];
    const auto nodes = net.neuron_nodes();
    REQUIRE(nodes.size() == spec.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const NeuronLayer& l = net.neuron(nodes[i]);
      CHECK(l.activation() == SourceActivation::QCFS);
      CHECK(l.levels() == spec[i]["L"].get<int>());
      REQUIRE(l.threshold().size() == 1);
      CHECK(l.threshold()[0] == Approx(spec[i]["thresh"].get<double>()));
    }
  }
}

TEST_CASE("max pooling matches LibTorch", "[import]") {
  Network net = check_ok_fixture("maxpool_scripted.pt");
  CHECK(count_layers<MaxPool2d>(net) == 1);
}

TEST_CASE("every ok fixture in fixtures.json matches LibTorch", "[import]") {
  for (const auto& e : fixtures()["fixtures"])
    if (e["kind"] == "ok") {
      DYNAMIC_SECTION(e["file"].get<std::string>()) { check_ok_fixture(e["file"].get<std::string>()); }
    }
}

TEST_CASE("error fixtures fail with the message fixtures.json expects", "[import]") {
  for (const auto& e : fixtures()["fixtures"])
    if (e["kind"] == "error") {
      const std::string file = e["file"];
      DYNAMIC_SECTION(file) {
        const std::string msg = import_error(kFixtures + file, shape_of(e));
        INFO(msg);
        CHECK(lower(msg).find(lower(e["expected_error"].get<std::string>())) != std::string::npos);
        CHECK(msg.find(file) != std::string::npos);  // names the file
      }
    }
}

TEST_CASE("unsupported ops are named with their place in the model", "[import]") {
  const std::string msg = import_error(kFixtures + "unsupported_sigmoid.pt");
  INFO(msg);
  CHECK(msg.find("the activation Sigmoid (aten::sigmoid) cannot be converted") != std::string::npos);
  CHECK(msg.find("retrain the CNN with ReLU or QCFS") != std::string::npos);
  CHECK(msg.find("make_fixtures.py:") != std::string::npos);  // the source line
  CHECK(msg.find("torch.sigmoid") != std::string::npos);      // and its code
  const std::string lstm = import_error(kFixtures + "unsupported_lstm.pt");
  INFO(lstm);
  CHECK(lstm.find("'lstm'") != std::string::npos);
}

TEST_CASE("files that are not usable TorchScript give clear errors", "[import]") {
  const std::string dir = std::string(SNN_BINARY_DIR) + "/";
  // A truncated copy of a good archive.
  std::ifstream in(kFixtures + "seq_scripted.pt", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 1000);
  const std::string truncated = dir + "test_tmp_truncated.pt";
  std::ofstream(truncated, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
  std::string msg = import_error(truncated);
  CHECK_THAT(msg, Catch::Contains("truncated") && Catch::Contains(truncated));

  const std::string empty = dir + "test_tmp_empty.pt";
  std::ofstream(empty, std::ios::binary).close();
  CHECK_THAT(import_error(empty), Catch::Contains("not a TorchScript archive"));

  const std::string text = dir + "test_tmp_text.pt";
  std::ofstream(text) << "not a model\n";
  CHECK_THAT(import_error(text), Catch::Contains("not a TorchScript archive"));

  CHECK_THAT(import_error(dir + "test_tmp_does_not_exist.pt"), Catch::Contains("cannot open"));
  CHECK_THAT(import_error(kFixtures + "not_torchscript.pt"), Catch::Contains("torch.jit.script"));
  CHECK_THROWS_WITH(torchscript_forward(truncated, Tensor({1, 1, 12, 12})), Catch::Contains("truncated"));
}

TEST_CASE("a wrong input shape is reported as such, naming the layer", "[import]") {
  // Three channels into a one-channel conv.
  std::string msg = import_error(kFixtures + "seq_scripted.pt", {3, 12, 12});
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("'0'") && Catch::Contains("input shape [3, 12, 12]"));
  // Right channels, wrong size: the linear layer's feature count does not fit.
  msg = import_error(kFixtures + "seq_scripted.pt", {1, 16, 16});
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("'8'") && Catch::Contains("input shape [1, 16, 16]"));
  CHECK_THAT(import_error(kFixtures + "seq_scripted.pt", {12, 12}), Catch::Contains("[C, H, W]"));
}

TEST_CASE("the neuron configuration is applied to every activation", "[import]") {
  ImportOptions opts;
  opts.input_shape = {1, 12, 12};
  opts.neuron.model = NeuronModel::LIF;
  opts.neuron.beta = 0.9f;
  opts.neuron.reset = Reset::Zero;
  opts.neuron.v_init = 0.25f;
  Network net = import_torchscript(kFixtures + "resnet_traced.pt", opts);
  for (int i : net.neuron_nodes()) {
    const NeuronConfig& c = net.neuron(i).config();
    CHECK(c.model == NeuronModel::LIF);
    CHECK(c.beta == 0.9f);
    CHECK(c.reset == Reset::Zero);
    CHECK(c.v_init == 0.25f);
  }
}
