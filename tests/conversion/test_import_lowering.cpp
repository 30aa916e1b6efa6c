// lower_graph on hand-made OpGraphs: the format-neutral part of the .pt2 and ONNX importers. Each graph
// is what an exporter writes for a small model; the network must be the one the model computes.
#include <catch2/catch.hpp>

#include <cmath>

#include "snn/conversion/import/lower_graph.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/layers/all.hpp"

using namespace snn::conversion;

namespace {

// A graph over a [2, C, H, W] input, built node by node.
struct G {
  OpGraph g;
  explicit G(snn::Shape input) {
    g.format = "test graph";
    g.batch = 2;
    OpValue v;
    v.name = "x";
    v.shape = {2};
    v.shape.insert(v.shape.end(), input.begin(), input.end());
    g.input = g.add_value(v);
  }
  int value(const std::string& name) {
    OpValue v;
    v.name = name;
    return g.add_value(v);
  }
  int constant(const std::string& name, snn::Shape shape, std::vector<float> values) {
    return g.add_constant(name, OpConstant::of(std::move(shape), std::move(values)));
  }
  int scalar(double v) { return g.add_constant("s" + std::to_string(g.values.size()), OpConstant::scalar(v)); }
  int op(const std::string& kind, std::vector<int> inputs, std::map<std::string, OpAttr> attrs = {},
         const std::string& scope = "", const std::string& cls = "") {
    OpNode n;
    n.op = kind;
    n.source_op = "test." + kind;
    n.name = kind + std::to_string(g.nodes.size());
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    n.scope = scope;
    n.scope_class = cls;
    const int out = value(n.name);
    n.outputs = {out};
    g.nodes.push_back(n);
    return out;
  }
  snn::Network lower(snn::Shape input, ImportReport* report = nullptr) {
    ImportOptions o;
    o.input_shape = std::move(input);
    return lower_graph(g, "model.test", o, report);
  }
};

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * float((i * 7) % 11 - 5);
  return v;
}

std::map<std::string, OpAttr> conv_attrs() {
  return {{"stride", std::vector<int64_t>{1, 1}}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t(1)}};
}

// Appends the QCFS module's forward as torch.export writes it (straight-through floor included).
int qcfs_ops(G& t, int x, int theta, double levels, const std::string& scope) {
  const int d = t.op("div", {x, theta}, {}, scope, "QCFS");
  const int c = t.op("clamp", {d}, {{"min", 0.0}, {"max", 1.0}}, scope, "QCFS");
  const int m = t.op("mul", {c, t.scalar(levels)}, {}, scope, "QCFS");
  const int a = t.op("add", {m, t.scalar(0.5)}, {}, scope, "QCFS");
  const int f = t.op("floor", {a}, {}, scope, "QCFS");
  const int s = t.op("sub", {f, a}, {}, scope, "QCFS");
  const int det = t.op("identity", {s}, {}, scope, "QCFS");
  const int a2 = t.op("add", {a, det}, {}, scope, "QCFS");
  const int q = t.op("div", {a2, t.scalar(levels)}, {}, scope, "QCFS");
  return t.op("mul", {q, theta}, {}, scope, "QCFS");
}

}  // namespace

TEST_CASE("lowering: conv, batch norm folded, ReLU, flatten, linear", "[import][lowering]") {
  G t({1, 4, 4});
  const int w = t.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f));
  const int conv = t.op("conv2d", {t.g.input, w, -1}, conv_attrs(), "0", "Conv2d");
  const int bn = t.op("batch_norm", {conv, t.constant("g", {2}, {2.0f, 0.5f}), t.constant("b", {2}, {0.1f, -0.2f}),
                                     t.constant("m", {2}, {0.3f, 0.0f}), t.constant("v", {2}, {4.0f, 1.0f})},
                      {{"eps", 0.0}}, "1", "BatchNorm2d");
  const int relu = t.op("relu", {bn}, {}, "2", "ReLU");
  const int flat = t.op("flatten", {relu}, {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
  t.g.output = t.op("linear", {flat, t.constant("lw", {3, 32}, ramp(96, 0.01f)), -1}, {}, "4", "Linear");
  ImportReport report;
  snn::Network net = t.lower({1, 4, 4}, &report);
  REQUIRE(net.size() == 4);
  CHECK(net.layer(0).type() == "conv2d");
  CHECK(net.layer(0).name() == "0");
  CHECK(net.layer(1).type() == "neuron");
  CHECK(net.layer(1).name() == "2");
  CHECK(net.layer(2).type() == "flatten");
  CHECK(net.layer(3).type() == "linear");
  CHECK(report.batchnorms_folded == 1);
  CHECK(report.relu_layers == 1);
  // Folded: channel 0 scaled by 2/sqrt(4) = 1, bias 0.1 - 0.3; channel 1 by 0.5.
  const auto& c = static_cast<const snn::Conv2d&>(net.layer(0));
  CHECK(c.weight()[0] == Approx(ramp(18, 0.1f)[0]));
  CHECK(c.weight()[9] == Approx(0.5f * ramp(18, 0.1f)[9]));
  CHECK(c.bias()[0] == Approx(0.1f - 0.3f));
  CHECK(c.bias()[1] == Approx(-0.2f));
  // The node that stands for the batch norm's output is checked against it.
  REQUIRE(report.reference_names.size() == 4);
  CHECK(report.reference_names[0] == t.g.values[size_t(bn)].name);
  CHECK(report.reference_names[1] == t.g.values[size_t(relu)].name);
  CHECK(report.reference_output_name == t.g.values[size_t(t.g.output)].name);
}

TEST_CASE("lowering: QCFS spelled as its ops becomes one QCFS neuron with its theta and L", "[import][lowering]") {
  for (double levels : {4.0, 8.0, 16.0}) {
    G t({1, 4, 4});
    const int conv = t.op("conv2d", {t.g.input, t.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f)), -1}, conv_attrs());
    const int theta = t.constant("thresh", {}, {2.5f});
    const int q = qcfs_ops(t, conv, theta, levels, "features.5");
    t.g.output = t.op("mean", {q}, {{"dims", std::vector<int64_t>{2, 3}}, {"keepdim", int64_t(0)}});
    ImportReport report;
    snn::Network net = t.lower({1, 4, 4}, &report);
    REQUIRE(net.size() == 4);  // conv, qcfs, avgpool, flatten
    const auto& n = net.neuron(1);
    CHECK(n.name() == "features.5");
    CHECK(n.activation() == snn::SourceActivation::QCFS);
    CHECK(n.levels() == int(levels));
    CHECK(n.theta(0) == 2.5f);
    CHECK(report.relu_layers == 0);
    CHECK(report.reference_names[1] == t.g.values[size_t(q)].name);
  }
}

TEST_CASE("lowering: ReLU6 in three spellings is clip(0, 6), and max(x, 0) is ReLU", "[import][lowering]") {
  for (int spelling = 0; spelling < 4; ++spelling) {
    G t({2, 3, 3});
    const int x = t.op("conv2d", {t.g.input, t.constant("w", {2, 2, 1, 1}, {1, 0, 0, 1}), -1},
                       {{"padding", std::vector<int64_t>{0, 0, 0, 0}}});
    int y = -1;
    if (spelling == 0) y = t.op("clamp", {x}, {{"min", 0.0}, {"max", 6.0}});
    if (spelling == 1) y = t.op("minimum", {t.op("maximum", {x, t.scalar(0)}), t.scalar(6)});
    if (spelling == 2) y = t.op("clamp", {t.op("relu", {x})}, {{"max", 6.0}});
    if (spelling == 3) y = t.op("maximum", {t.scalar(0), x});
    t.g.output = t.op("flatten", {y}, {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
    snn::Network net = t.lower({2, 3, 3});
    const auto& n = net.neuron(1);
    INFO("spelling " << spelling);
    CHECK(n.activation() == (spelling == 3 ? snn::SourceActivation::ReLU : snn::SourceActivation::Clip));
    if (spelling != 3) CHECK(n.theta(0) == 6.0f);
  }
}

TEST_CASE("lowering: an affine map before ReLU folds into the conv, after a concatenation it is a layer",
          "[import][lowering]") {
  G t({1, 4, 4});
  const int conv = t.op("conv2d", {t.g.input, t.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f)), -1}, conv_attrs());
  const int scaled = t.op("mul", {conv, t.constant("s", {1, 2, 1, 1}, {2.0f, 3.0f})});
  const int shifted = t.op("add", {scaled, t.constant("b", {2, 1, 1}, {0.5f, -1.0f})});
  const int r1 = t.op("relu", {shifted});
  const int cat = t.op("cat", {r1, conv}, {{"dim", int64_t(1)}});
  const int mul = t.op("mul", {cat, t.constant("s2", {4, 1, 1}, {1.0f, 2.0f, 3.0f, 4.0f})});
  const int r2 = t.op("relu", {t.op("add", {mul, t.scalar(0.25)})});
  t.g.output = t.op("flatten", {r2}, {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
  // conv is read twice (the mul and the cat): nothing may fold into it.
  snn::Network net = t.lower({1, 4, 4});
  std::vector<std::string> types;
  for (int i = 0; i < net.size(); ++i) types.push_back(net.layer(i).type());
  CHECK(types == std::vector<std::string>{"conv2d", "channel_affine", "neuron", "channel_gather", "channel_affine",
                                          "neuron", "flatten"});
  const auto& a = static_cast<const snn::ChannelAffine&>(net.layer(1));
  CHECK(a.scale()[1] == 3.0f);
  CHECK(a.shift()[1] == -1.0f);

  // The same map on a conv nothing else reads: folded into its weights and bias.
  G u({1, 4, 4});
  const int c2 = u.op("conv2d", {u.g.input, u.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f)), -1}, conv_attrs());
  const int r = u.op("relu", {u.op("add", {u.op("mul", {c2, u.scalar(2.0)}), u.scalar(0.5)})});
  u.g.output = u.op("flatten", {r}, {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
  snn::Network folded = u.lower({1, 4, 4});
  REQUIRE(folded.size() == 3);
  const auto& c = static_cast<const snn::Conv2d&>(folded.layer(0));
  CHECK(c.weight()[1] == Approx(2.0f * ramp(18, 0.1f)[1]));
  CHECK(c.bias()[0] == Approx(0.5f));
}

TEST_CASE("lowering: a channel shuffle is one gather, a residual sum is an Add", "[import][lowering]") {
  G t({4, 2, 2});
  const int conv = t.op("conv2d", {t.g.input, t.constant("w", {4, 4, 1, 1}, ramp(16, 0.1f)), -1},
                        {{"padding", std::vector<int64_t>{0, 0, 0, 0}}});
  const int r = t.op("relu", {conv});
  const int v = t.op("reshape", {r}, {{"shape", std::vector<int64_t>{2, 2, 2, 2, 2}}});
  const int p = t.op("permute", {v}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  const int back = t.op("reshape", {p}, {{"shape", std::vector<int64_t>{-1, 4, 2, 2}}});
  const int sum = t.op("add", {back, r});
  t.g.output = t.op("flatten", {sum}, {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
  snn::Network net = t.lower({4, 2, 2});
  REQUIRE(net.size() == 5);
  const auto& g = static_cast<const snn::ChannelGather&>(net.layer(2));
  CHECK(g.source_channel() == std::vector<int64_t>{0, 2, 1, 3});
  CHECK(net.layer(3).type() == "add");
}

TEST_CASE("lowering: what has no spiking counterpart is refused by name", "[import][lowering]") {
  {
    G t({1, 4, 4});
    const int x = t.op("conv2d", {t.g.input, t.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f)), -1}, conv_attrs());
    const int leaky = t.op("maximum", {x, t.op("mul", {x, t.scalar(0.1)})}, {}, "act", "LeakyReLU");
    t.g.output = t.op("flatten", {leaky}, {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
    CHECK_THROWS_WITH(t.lower({1, 4, 4}), Catch::Contains("model.test") && Catch::Contains("not 0 below 0") &&
                                              Catch::Contains("LeakyReLU"));
  }
  {
    G t({1, 4, 4});
    const int x = t.op("conv2d", {t.g.input, t.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f)), -1}, conv_attrs());
    t.g.output = t.op("Sigmoid", {x});
    CHECK_THROWS_WITH(t.lower({1, 4, 4}), Catch::Contains("unsupported op 'test.Sigmoid'") && Catch::Contains("test graph"));
  }
  {
    G t({1, 4, 4});
    const int x = t.op("conv2d", {t.g.input, t.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f)), -1}, conv_attrs());
    const int floor_only = t.op("floor", {t.op("relu", {x})});  // a staircase without QCFS's shift
    t.g.output = t.op("flatten", {t.op("minimum", {floor_only, t.scalar(4)})}, {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
    CHECK_THROWS_WITH(t.lower({1, 4, 4}), Catch::Contains("neither clip") && Catch::Contains("QCFS"));
  }
  {
    G t({1, 4, 4});  // exported for another image size
    t.g.output = t.op("conv2d", {t.g.input, t.constant("w", {2, 1, 3, 3}, ramp(18, 0.1f)), -1}, conv_attrs());
    CHECK_THROWS_WITH(t.lower({1, 8, 8}), Catch::Contains("exported for images [1, 4, 4]"));
  }
}
