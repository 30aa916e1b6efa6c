// Importer cases the Python fixtures do not cover, on small TorchScript modules compiled here from
// source with LibTorch (Module::define): other ways of writing linear layers and pooling, QCFS naming
// rules, and the errors a model must not slip past (dilation, BN not after conv, arithmetic on
// activations, batch-size-dependent code, ceil-mode pooling, ...).
#include <torch/script.h>

#include <catch2/catch.hpp>

#include "import_test_util.hpp"
#include "snn/conversion/torch_import.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "snn/layers/all.hpp"

using namespace snn;
using namespace snn::conversion;

namespace {

torch::jit::Module module(const std::string& cls) { return torch::jit::Module("__torch__." + cls); }

// A conv layer [cout, cin, 3, 3] with bias as parameters of m under the given names.
void add_conv(torch::jit::Module& m, const std::string& w, const std::string& b, int64_t cout, int64_t cin) {
  m.register_parameter(w, torch::randn({cout, cin, 3, 3}) * 0.4, false);
  m.register_parameter(b, torch::randn({cout}) * 0.1, false);
}

std::string save(torch::jit::Module& m, const std::string& name) {
  const std::string path = std::string(SNN_BINARY_DIR) + "/test_tmp_synth_" + name + ".pt";
  m.save(path);
  return path;
}

// Imports m and compares the ANN view with LibTorch on 8 random N(0,1) images.
Network check_matches(torch::jit::Module& m, const std::string& name, Shape shape = {2, 6, 6}) {
  const std::string path = save(m, name);
  ImportOptions opts;
  opts.input_shape = shape;
  Network net = import_torchscript(path, opts);
  torch::manual_seed(99);
  Shape batch = {8};
  batch.insert(batch.end(), shape.begin(), shape.end());
  at::Tensor xt = torch::randn(batch).contiguous();
  Tensor x(batch, std::vector<float>(xt.data_ptr<float>(), xt.data_ptr<float>() + xt.numel()));
  CpuBackend cpu(1);
  const Tensor ours = cpu.forward_ann(net, x);
  const Tensor ref = torchscript_forward(path, x);
  REQUIRE(ours.shape() == ref.shape());
  CHECK(max_abs_diff(ours, ref) < 1e-4f);
  return net;
}

std::string import_error(torch::jit::Module& m, const std::string& name, Shape shape = {2, 6, 6}) {
  return snn_test::import_error_message(save(m, name), std::move(shape));
}

torch::jit::Module qcfs_module(const std::string& cls, bool with_L, at::Tensor thresh) {
  auto q = module(cls);
  q.register_parameter("thresh", thresh, false);
  if (with_L) q.register_attribute("L", c10::IntType::get(), int64_t(4));
  q.define(R"(
def forward(self, x):
    x = x / self.thresh
    x = torch.clamp(x, 0, 1)
    y = x * 4 + 0.5
    y = y + (torch.floor(y) - y).detach()
    return y / 4 * self.thresh
)");
  return q;
}

// conv -> act (a submodule) -> flatten -> linear
torch::jit::Module with_activation(torch::jit::Module act) {
  auto m = module("Net");
  add_conv(m, "w", "b", 3, 2);
  m.register_parameter("fw", torch::randn({4, 3 * 6 * 6}) * 0.2, false);
  m.register_module("act", act);
  m.define(R"(
def forward(self, x):
    x = self.act.forward(torch.conv2d(x, self.w, self.b, 1, 1))
    return torch.linear(torch.flatten(x, 1), self.fw)
)");
  return m;
}

}  // namespace

TEST_CASE("synthetic: linear layers written as addmm, matmul + bias, mean pooling", "[import]") {
  torch::manual_seed(1);
  auto m = module("Net");
  add_conv(m, "w", "b", 4, 2);
  m.register_parameter("w1", torch::randn({4, 5}) * 0.3, false);  // used as x @ w1 (w1 is [in, out])
  m.register_parameter("b1", torch::randn({5}) * 0.1, false);
  m.register_parameter("w2", torch::randn({3, 5}) * 0.3, false);
  m.register_parameter("b2", torch::randn({3}) * 0.1, false);
  m.define(R"(
def forward(self, x):
    x = torch.relu(torch.conv2d(x, self.w, self.b, 1, 1))
    x = x.float().mean([2, 3], keepdim=True).squeeze()
    x = torch.relu(torch.matmul(x, self.w1) + self.b1)
    x = x.contiguous().detach()
    return torch.addmm(self.b2, x, self.w2.t())
)");
  Network net = check_matches(m, "linear_forms");
  CHECK(net.layer(net.output_node()).type() == "linear");
}

TEST_CASE("synthetic: a shared activation module used twice gets two uniquely named layers", "[import]") {
  torch::manual_seed(2);
  auto relu = module("ReLUish");
  relu.define("def forward(self, x):\n    return torch.relu(x)\n");
  auto m = module("Net");
  add_conv(m, "w1", "b1", 3, 2);
  add_conv(m, "w2", "b2", 3, 3);
  m.register_module("relu", relu);
  m.register_parameter("fw", torch::randn({4, 3 * 3 * 3}) * 0.2, false);
  m.define(R"(
def forward(self, x):
    x = self.relu.forward(torch.conv2d(x, self.w1, self.b1, 1, 1))
    x = self.relu.forward(torch.conv2d(x, self.w2, self.b2, 1, 1))
    x = torch.max_pool2d(x, 2, 2, 0, 1, True)
    x = x.reshape(x.size(0), -1)
    return torch.linear(x, self.fw)
)");
  Network net = check_matches(m, "shared_relu");  // ceil_mode on 6x6 with k=s=2 changes nothing
  CHECK(net.find("relu") >= 0);
  CHECK(net.find("relu_1") >= 0);
}

TEST_CASE("synthetic: QCFS naming rules", "[import]") {
  torch::manual_seed(3);
  SECTION("a class name containing QCFS (any case), per-channel thresholds") {
    auto m = with_activation(qcfs_module("MyQcfsAct", true, torch::tensor({1.0f, 1.5f, 2.0f}).reshape({3, 1, 1})));
    Network net = check_matches(m, "qcfs_channels");
    const NeuronLayer& l = net.neuron(net.find("act"));
    CHECK(l.activation() == SourceActivation::QCFS);
    CHECK(l.levels() == 4);
    CHECK(l.threshold() == std::vector<float>{1.0f, 1.5f, 2.0f});
  }
  SECTION("the same code under another class name is an error, not a silent ReLU") {
    auto m = with_activation(qcfs_module("Quantizer", true, torch::tensor(2.0)));
    const std::string msg = import_error(m, "qcfs_unnamed");
    INFO(msg);
    CHECK_THAT(msg, Catch::Contains("unsupported op aten::div") && Catch::Contains("QCFS") && Catch::Contains("'act'"));
  }
  SECTION("a QCFS class without L") {
    auto m = with_activation(qcfs_module("QCFS", false, torch::tensor(2.0)));
    CHECK_THAT(import_error(m, "qcfs_no_L"), Catch::Contains("'L'") && Catch::Contains("torch.jit.script"));
  }
}

TEST_CASE("synthetic: models snnc must refuse", "[import]") {
  torch::manual_seed(4);
  auto conv_net = [](const std::string& body) {
    auto m = module("Net");
    add_conv(m, "w", "b", 3, 2);
    m.register_parameter("fw", torch::randn({4, 3 * 6 * 6}) * 0.2, false);
    m.register_parameter("g", torch::rand({3}) + 0.5, false);
    m.register_parameter("be", torch::randn({3}) * 0.1, false);
    m.register_buffer("rm", torch::randn({3}) * 0.1);
    m.register_buffer("rv", torch::rand({3}) + 0.5);
    m.define("def forward(self, x):\n" + body);
    return m;
  };
  struct Case {
    const char* name;
    const char* body;
    const char* expect;
  };
  const Case cases[] = {
      {"dilation", "    return torch.conv2d(x, self.w, self.b, 1, 2, 2)\n", "dilated"},
      {"bn_after_pool",
       "    x = torch.avg_pool2d(torch.conv2d(x, self.w, self.b, 1, 1), 1)\n"
       "    return torch.batch_norm(x, self.g, self.be, self.rm, self.rv, False, 0.1, 1e-5, False)\n",
       "follows layer"},
      {"bn_shared_input",
       "    y = torch.conv2d(x, self.w, self.b, 1, 1)\n"
       "    z = torch.batch_norm(y, self.g, self.be, self.rm, self.rv, False, 0.1, 1e-5, False)\n"
       "    return torch.relu(z) + y\n",
       "before and after"},
      {"bn_training",
       "    y = torch.conv2d(x, self.w, self.b, 1, 1)\n"
       "    return torch.batch_norm(y, self.g, self.be, self.rm, self.rv, True, 0.1, 1e-5, False)\n",
       "training mode"},
      {"clamp_negative", "    return torch.clamp(torch.conv2d(x, self.w, self.b, 1, 1), -1.0, 1.0)\n", "min must be 0"},
      {"sigmoid", "    return torch.sigmoid(torch.conv2d(x, self.w, self.b, 1, 1))\n", "aten::sigmoid"},
      {"scale", "    return torch.relu(torch.conv2d(x, self.w, self.b, 1, 1)) * 2.0\n", "aten::mul"},
      {"cat", "    y = torch.conv2d(x, self.w, self.b, 1, 1)\n    return torch.cat([y, y], 1)\n", "aten::cat"},
      {"batch_branch",
       "    y = torch.conv2d(x, self.w, self.b, 1, 1)\n    if y.size(0) > 1:\n        y = torch.relu(y)\n    return y\n",
       "batch size"},
      {"fixed_batch", "    return torch.conv2d(x, self.w, self.b, 1, 1).view(8, -1)\n", "fixes the batch size"},
      {"linear_4d", "    return torch.linear(torch.conv2d(x, self.w, self.b, 1, 1), self.fw)\n", "flatten the activation first"},
      {"ceil_mode", "    return torch.max_pool2d(torch.conv2d(x, self.w, self.b, 1, 1), 4, 4, 0, 1, True)\n", "ceil_mode"},
      {"two_outputs",
       "    y = torch.flatten(torch.relu(torch.conv2d(x, self.w, self.b, 1, 1)), 1)\n"
       "    return (torch.linear(y, self.fw), y)\n",
       "single tensor"},
      {"returns_input", "    return x\n", "no layers"},
      {"readout_spiking", "    return torch.relu(torch.flatten(torch.conv2d(x, self.w, self.b, 1, 1), 1))\n", "readout"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      auto m = conv_net(c.body);
      const std::string msg = import_error(m, c.name);
      INFO(msg);
      CHECK_THAT(msg, Catch::Contains(c.expect));
      CHECK_THAT(msg, Catch::Contains("test_tmp_synth_" + std::string(c.name) + ".pt"));
    }
  }
}
