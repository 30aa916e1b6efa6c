// ONNX backend node conformance: onnx's backend node tests (data/node/<test>/ in onnx's layout: model.onnx,
// test_data_set_0/input_k.pb, output_k.pb; from Debian's libonnx-testdata, or written from the onnx wheel
// by onnx_node_testdata.py) run through snnc's ONNX reader, lower_graph and the CPU ANN view, and
// compared with onnx's expected outputs. Before them: every op the reader handles must be listed below,
// and test_relu must fail once its expected output is moved (the harness can fail).
//
// A test is selected when one of its nodes is an op the reader maps onto the activation (kOps) and every
// node is one the reader handles at all; the others test ops snnc does not claim. Every graph input but
// the first becomes a constant (an initializer made from its input_k.pb): snnc has one image input and
// takes weights, shapes and axes as constants. Each graph output is checked on its own (the reader reads
// out the first graph output). Every selected test ends as:
//   PASS: matches within onnx's backend-test tolerance (|got - want| <= 1e-7 + 1e-3 |want|);
//   FAIL: a wrong value or shape, or an error that is not a refusal;
//   N/A:  snnc cannot represent it, with the reason: the test's data types or rank, or the reader's or
//         the lowering's refusal (an snn::Error naming the op: snnc's contract for what it cannot convert).
// The ANN view runs each node's CPU kernel directly (as faithfulness.cpp does) instead of forward_ann:
// Network::validate() wants a vector readout, and a node test's output is any layer (a ReLU, a conv).
//
// Usage: onnx_node_conformance [--filter SUBSTRING] [DIR...]   (prints every selected test's result)
//   DIR: a test folder (with model.onnx) or a folder of them; default $SNNC_ONNX_NODE_TESTS, else
//   Debian's folder or the one the build writes, the first that exists.
//   Exit 0: no failure; 1: a failure; 77: no test data.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "import/onnx/onnx_convert.hpp"
#include "import/onnx/onnx_model.hpp"
#include "import/onnx/onnx_tensor.hpp"
#include "import/onnx/protobuf_wire.hpp"
#include "snn/conversion/import/lower_graph.hpp"
#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/network.hpp"

#ifndef SNN_DEBIAN_ONNX_NODE_TESTS
#define SNN_DEBIAN_ONNX_NODE_TESTS "/usr/share/libonnx-testdata/data/node"
#endif
#ifndef SNN_WRITTEN_ONNX_NODE_TESTS
#define SNN_WRITTEN_ONNX_NODE_TESTS ""  // where the build writes them from the onnx wheel
#endif

namespace fs = std::filesystem;
namespace onnx = snn::conversion::onnx;
using snn::conversion::OpConstant;

namespace {

// Ops the reader maps onto activations (the importer's layers): the ops this harness is about.
const std::set<std::string> kOps = {
    "Conv", "BatchNormalization", "Relu", "Clip", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Max", "Min",
    "Floor", "Ceil", "Round", "Neg", "Identity", "Dropout", "Cast", "AveragePool", "MaxPool", "GlobalAveragePool",
    "GlobalMaxPool", "ReduceMean", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split",
    "Slice", "Resize", "Upsample", "Pad", "Constant"};
// Ops the reader folds on constants only (shape arithmetic); a test may use them around a kOps op.
const std::set<std::string> kFoldOps = {
    "Shape", "Size", "Gather", "ConstantOfShape", "Equal", "Less", "Greater", "And", "Or", "Not", "Where", "Range",
    "Expand", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "Pow", "Mod", "Abs", "Sqrt", "Reciprocal", "Sign"};

// onnx's backend tests compare with numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7).
constexpr double kRtol = 1e-3, kAtol = 1e-7;

enum class Verdict { Pass, Fail, NotApplicable };

struct Outcome {
  Verdict verdict = Verdict::Pass;
  std::string detail;  // the error measure, or why it failed or does not apply
};

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw snn::Error("cannot read " + p.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void put_varint(std::string& s, uint64_t v) {
  for (; v >= 0x80; v >>= 7) s.push_back(char(uint8_t(v) | 0x80));
  s.push_back(char(v));
}

void put_len(std::string& s, uint32_t field, const std::string& payload) {
  put_varint(s, (uint64_t(field) << 3) | 2);
  put_varint(s, payload.size());
  s += payload;
}

// A serialized TensorProto decoded by the reader's own parser: wrapped as the one initializer of a
// ModelProto (graph = field 7, GraphProto.initializer = field 5). The wrapper must outlive the tensor.
onnx::Tensor parse_tensor_pb(const std::string& tensor_bytes, std::string& wrapper) {
  std::string graph;
  put_len(graph, 5, tensor_bytes);
  wrapper.clear();
  put_len(wrapper, 7, graph);
  onnx::Model m = onnx::parse_model(wrapper);
  if (m.graph.initializers.size() != 1) throw snn::Error("not a TensorProto");
  return m.graph.initializers[0];
}

OpConstant decode(const onnx::Tensor& t, const std::string& what) {
  std::vector<std::string> notes;
  return onnx::to_constant(t, onnx::TensorSource{what, ".", &notes}, what);
}

// The ANN view of every node, each through its CPU kernel: no readout rules (see the top).
snn::Tensor ann_output(const snn::Network& net, const snn::Tensor& images) {
  std::vector<snn::Tensor> outs(size_t(net.size()));
  for (int i = 0; i < net.size(); ++i) {
    std::vector<const snn::Tensor*> ins;
    for (int j : net.inputs(i)) ins.push_back(j == snn::Network::kInput ? &images : &outs[size_t(j)]);
    snn::cpu::make_kernel(net.layer(i), net.input_shapes(i))->forward(ins, outs[size_t(i)]);
  }
  return outs.back();
}

std::string shape_str(const snn::Shape& s) { return snn::to_string(s); }

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

Outcome compare(const snn::Tensor& got, const OpConstant& want) {
  if (got.shape() != want.shape)
    return {Verdict::Fail, "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape)};
  double max_err = 0, worst = 0;  // worst: error / allowed error
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.values[size_t(i)], g = got[i];
    const bool both_nan = std::isnan(w) && std::isnan(g);
    const double err = both_nan ? 0.0 : (w == g ? 0.0 : std::fabs(g - w));  // w == g: equal infinities
    const double allowed = kAtol + kRtol * std::fabs(w);
    if (!(err <= allowed)) ++bad;  // NaN against a number fails too
    max_err = std::max(max_err, std::isnan(err) ? INFINITY : err);
    worst = std::max(worst, err / allowed);
  }
  const std::string m = "max |err| " + fmt(max_err);
  if (bad) return {Verdict::Fail, m + ", " + std::to_string(bad) + "/" + std::to_string(want.numel()) +
                                      " elements beyond tolerance (worst " + fmt(worst) + "x)"};
  return {Verdict::Pass, m};
}

// Strips the "<path>: " that reader and lowering messages start with, and keeps one line.
std::string reason(const std::string& what, const std::string& path) {
  std::string s = what;
  for (size_t at; (at = s.find(path + ": ")) != std::string::npos;) s.erase(at, path.size() + 2);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.size() > 220 ? s.substr(0, 217) + "..." : s;
}

}  // namespace

namespace {

Outcome not_applicable(std::string why) { return {Verdict::NotApplicable, std::move(why)}; }
Outcome failed(std::string why) { return {Verdict::Fail, std::move(why)}; }

// Graph output k alone (the reader reads out the first output) through reader, lowering and ANN view.
// `perturb` moves the expected value's first element beyond tolerance (the harness's self-check).
Outcome run_output(const onnx::Model& base, size_t k, const std::string& path, const snn::Tensor& image,
                   const onnx::Tensor& want, bool perturb) {
  const onnx::ValueInfo& out = base.graph.outputs[k];
  if (out.elem_type != onnx::kFloat)
    return not_applicable("output '" + out.name + "' is " + onnx::data_type_name(out.elem_type) +
                          "; snnc computes float32");
  onnx::Model m = base;
  m.graph.outputs = {out};
  snn::conversion::OpGraph graph;
  snn::Network net;
  try {
    graph = onnx::Converter(path, m).run();
  } catch (const snn::Error& e) {
    return not_applicable("reader: " + reason(e.what(), path));
  } catch (const std::exception& e) {
    return failed(std::string("reader threw a non-snn error: ") + e.what());
  }
  snn::conversion::ImportOptions opts;
  opts.input_shape = snn::Shape(image.shape().begin() + 1, image.shape().end());
  try {
    snn::conversion::ImportReport report;
    net = snn::conversion::lower_graph(graph, path, opts, &report);
  } catch (const snn::Error& e) {
    return not_applicable("lowering: " + reason(e.what(), path));
  } catch (const std::exception& e) {
    return failed(std::string("lowering threw a non-snn error: ") + e.what());
  }
  snn::Tensor got;
  try {
    got = ann_output(net, image);
  } catch (const std::exception& e) {
    return failed(std::string("the lowered network does not run: ") + e.what());
  }
  OpConstant expected = decode(want, "output '" + out.name + "'");
  if (perturb && !expected.values.empty()) expected.values[0] += 1e-2f * (1.0f + std::fabs(expected.values[0]));
  return compare(got, expected);
}

// The tensors of test_data_set_0 named `kind` ("input", "output"), in order, decoded by the reader's
// parser; `keep` holds the bytes they point into.
std::vector<onnx::Tensor> load_tensors(const fs::path& dir, const std::string& kind, std::deque<std::string>& keep) {
  std::vector<onnx::Tensor> ts;
  for (int k = 0;; ++k) {
    const fs::path p = dir / "test_data_set_0" / (kind + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) return ts;
    keep.push_back(read_bytes(p));
    keep.emplace_back();
    ts.push_back(parse_tensor_pb(keep[keep.size() - 2], keep.back()));
  }
}

// Distinct op types of the graph's nodes, in order; `selected`: one is in kOps and all are read.
std::vector<std::string> op_types(const onnx::Model& m, bool* selected) {
  std::vector<std::string> ops;
  bool any = false, all = true;
  for (const onnx::Node& n : m.graph.nodes) {
    const bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
    const std::string op = default_domain ? n.op_type : n.domain + "::" + n.op_type;
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    any = any || kOps.count(op);
    all = all && (kOps.count(op) || kFoldOps.count(op));
  }
  *selected = any && all;
  return ops;
}

// Outcomes of all outputs as one: a failure wins, then a pass (N/A outputs noted), then N/A.
Outcome combine(const std::vector<Outcome>& outs) {
  Outcome r = not_applicable("");
  std::string passed, na;
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string tag = outs.size() > 1 ? "output " + std::to_string(k) + ": " : "";
    const Outcome& o = outs[k];
    if (o.verdict == Verdict::Fail) return {Verdict::Fail, tag + o.detail};
    std::string& into = o.verdict == Verdict::Pass ? passed : na;
    into += (into.empty() ? "" : "; ") + tag + o.detail;
    if (o.verdict == Verdict::Pass) r.verdict = Verdict::Pass;
  }
  r.detail = r.verdict == Verdict::Pass ? passed + (na.empty() ? "" : " (not applicable: " + na + ")") : na;
  return r;
}

struct TestResult {
  std::string name;
  std::vector<std::string> ops;
  Outcome outcome;
};

// One node test; nullopt when it is not selected (see the top).
std::optional<TestResult> run_test(const fs::path& dir, bool perturb = false) {
  const std::string path = (dir / "model.onnx").string();
  TestResult r{dir.filename().string(), {}, {}};
  const std::string bytes = read_bytes(path);
  onnx::Model model;
  try {
    model = onnx::parse_model(bytes);
  } catch (const snn::Error& e) {
    r.outcome = failed(std::string("onnx's own model does not parse: ") + e.what());
    return r;
  }
  bool selected = false;
  r.ops = op_types(model, &selected);
  if (!selected) return std::nullopt;
  std::deque<std::string> keep;
  const std::vector<onnx::Tensor> inputs = load_tensors(dir, "input", keep), outputs = load_tensors(dir, "output", keep);
  const auto& g = model.graph;
  if (inputs.size() != g.inputs.size() || outputs.size() != g.outputs.size() || outputs.empty()) {
    r.outcome = failed("the data set has " + std::to_string(inputs.size()) + " inputs and " +
                       std::to_string(outputs.size()) + " outputs, the graph " + std::to_string(g.inputs.size()) +
                       " and " + std::to_string(g.outputs.size()));
    return r;
  }
  const auto skip = [&](const std::string& why) {
    r.outcome = not_applicable(why);
    return r;
  };
  if (inputs.empty()) return skip("the graph has no input; snnc needs an image input");
  if (g.inputs[0].elem_type != onnx::kFloat)
    return skip("input '" + g.inputs[0].name + "' is " + onnx::data_type_name(g.inputs[0].elem_type) +
                "; snnc's image input is float32");
  if (inputs[0].dims.size() < 2)
    return skip("a " + std::to_string(inputs[0].dims.size()) + "-D input has no batch dimension; snnc's inputs are [N, ...]");
  // Every input but the first is a constant of the model, as weights are.
  for (size_t k = 1; k < inputs.size(); ++k) {
    model.graph.initializers.push_back(inputs[k]);
    model.graph.initializers.back().name = g.inputs[k].name;
  }
  const snn::Tensor image = decode(inputs[0], "input '" + g.inputs[0].name + "'").tensor();
  std::vector<Outcome> outs;
  for (size_t k = 0; k < outputs.size(); ++k) outs.push_back(run_output(model, k, path, image, outputs[k], perturb));
  r.outcome = combine(outs);
  return r;
}

}  // namespace

namespace {

// Test folders under the given paths (a test folder itself, or a folder of them), sorted by name.
std::vector<fs::path> test_dirs(const std::vector<std::string>& roots) {
  std::vector<fs::path> dirs;
  for (const std::string& root : roots) {
    if (fs::exists(fs::path(root) / "model.onnx")) {
      dirs.push_back(root);
      continue;
    }
    if (!fs::is_directory(root)) continue;
    for (const auto& e : fs::directory_iterator(root))
      if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// The roots to read when none is given: $SNNC_ONNX_NODE_TESTS, else the first existing default.
std::vector<std::string> default_roots() {
  if (const char* env = std::getenv("SNNC_ONNX_NODE_TESTS"); env && *env) return {env};
  for (const std::string root : {SNN_DEBIAN_ONNX_NODE_TESTS, SNN_WRITTEN_ONNX_NODE_TESTS})
    if (!root.empty() && fs::is_directory(root)) return {root};
  return {};
}

const char* label(Verdict v) { return v == Verdict::Pass ? "PASS" : v == Verdict::Fail ? "FAIL" : "N/A "; }

struct Tally {
  int tests = 0, passed = 0, failed = 0, not_applicable = 0;
  void add(Verdict v) {
    ++tests;
    (v == Verdict::Pass ? passed : v == Verdict::Fail ? failed : not_applicable)++;
  }
};

// Per op of kOps (every one, tests or not: none goes missing silently), then the total.
void print_table(const std::vector<TestResult>& results) {
  std::map<std::string, Tally> per_op;
  Tally total;
  for (const std::string& op : kOps) per_op[op];
  for (const TestResult& r : results) {
    total.add(r.outcome.verdict);
    for (const std::string& op : r.ops)
      if (kOps.count(op)) per_op[op].add(r.outcome.verdict);
  }
  std::printf("\n%-20s %6s %11s %7s %7s %15s\n", "op", "tests", "applicable", "passed", "failed", "not applicable");
  const auto row = [](const std::string& name, const Tally& t) {
    std::printf("%-20s %6d %11d %7d %7d %15d\n", name.c_str(), t.tests, t.passed + t.failed, t.passed, t.failed,
                t.not_applicable);
  };
  for (const auto& [op, t] : per_op) row(op, t);
  row("all tests", total);
  std::printf("(a test counts under every op of kOps it has; 'all tests' counts each test once)\n");
  // Why the not-applicable tests are: the first reason each gives.
  std::map<std::string, int> why;
  for (const TestResult& r : results) {
    if (r.outcome.verdict != Verdict::NotApplicable) continue;
    const std::string& d = r.outcome.detail;
    const size_t first = std::min({d.find("float32"), d.find("reader:"), d.find("lowering:"), d.find("-D input")});
    why[first == std::string::npos ? "other"
        : d.compare(first, 7, "float32") == 0 ? "a data type snnc does not compute in"
        : d.compare(first, 7, "reader:") == 0 ? "the reader refuses"
        : d.compare(first, 9, "lowering:") == 0 ? "the lowering refuses"
                                                 : "a 1-D input (no batch dimension)"]++;
  }
  for (const auto& [what, count] : why) std::printf("not applicable: %4d  %s\n", count, what.c_str());
}

// Every op the reader has a handler for is in kOps or kFoldOps: an op the reader learns is never left out
// of the selection unnoticed.
bool ops_known() {
  onnx::HandlerTable table;
  onnx::add_nn_handlers(table);
  onnx::add_pool_handlers(table);
  onnx::add_tensor_handlers(table);
  onnx::add_shape_handlers(table);
  bool ok = true;
  for (const auto& entry : table)
    if (!kOps.count(entry.first) && !kFoldOps.count(entry.first)) {
      std::printf("the reader maps %s, which this harness does not list: add it to kOps or kFoldOps\n",
                  entry.first.c_str());
      ok = false;
    }
  return ok;
}

// The harness must be able to fail: a test it passes (test_relu, test_conv_with_strides_padding, the
// first that is there) fails once its expected output is moved beyond tolerance.
bool self_check(const std::vector<fs::path>& dirs) {
  for (const char* name : {"test_relu", "test_conv_with_strides_padding"}) {
    auto it = std::find_if(dirs.begin(), dirs.end(), [&](const fs::path& d) { return d.filename() == name; });
    if (it == dirs.end()) continue;
    const std::optional<TestResult> ok = run_test(*it), wrong = run_test(*it, true);
    const bool good = ok && wrong && ok->outcome.verdict == Verdict::Pass && wrong->outcome.verdict == Verdict::Fail;
    std::printf("self-check on %s: %s (as given: %s; with its expected output moved: %s)\n", name,
                good ? "ok" : "BROKEN", ok ? label(ok->outcome.verdict) : "not selected",
                wrong ? label(wrong->outcome.verdict) : "not selected");
    return good;
  }
  return true;  // a folder of other tests: nothing to check with
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter;
  std::vector<std::string> roots;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a.rfind("--", 0) == 0) {
      std::cerr << "usage: onnx_node_conformance [--filter SUBSTRING] [DIR...]\n";
      return 2;
    } else roots.push_back(a);
  }
  if (roots.empty()) roots = default_roots();
  const std::vector<fs::path> dirs = test_dirs(roots);
  if (dirs.empty()) {
    std::printf("no ONNX node tests found (set SNNC_ONNX_NODE_TESTS, install libonnx-testdata, or write them "
                "with tests/conversion/onnx_node_testdata.py): skipped\n");
    return 77;
  }
  if (!ops_known() || !self_check(dirs)) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<TestResult> results;
  int considered = 0;
  for (const fs::path& dir : dirs) {
    if (!filter.empty() && dir.filename().string().find(filter) == std::string::npos) continue;
    ++considered;
    std::optional<TestResult> r;
    try {
      r = run_test(dir);
    } catch (const std::exception& e) {  // the harness's own reading of the data set
      r = TestResult{dir.filename().string(), {}, failed(std::string("cannot run: ") + e.what())};
    }
    if (!r) continue;
    std::string ops;
    for (const std::string& op : r->ops) ops += (ops.empty() ? "" : " ") + op;
    std::printf("%s %-52s [%s] %s\n", label(r->outcome.verdict), r->name.c_str(), ops.c_str(), r->outcome.detail.c_str());
    results.push_back(std::move(*r));
  }
  print_table(results);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int fails = int(std::count_if(results.begin(), results.end(), [](const TestResult& r) { return r.outcome.verdict == Verdict::Fail; }));
  std::printf("%zu of %d node tests in %s concern snnc's ops; %d failed (%.1f s)\n", results.size(), considered,
              roots.size() == 1 ? roots[0].c_str() : "the given folders", fails, secs);
  if (results.empty()) {
    std::printf("no node test of an op snnc reads: the data is not onnx's node tests?\n");
    return 1;
  }
  return fails ? 1 : 0;
}
