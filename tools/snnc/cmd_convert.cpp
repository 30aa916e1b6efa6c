// snnc convert MODEL.pt -o OUT.snn.h5 [--data CALIB]: import a TorchScript CNN (BN folded), set the
// thresholds of its ReLU neurons from calibration data, check the import against LibTorch's own forward,
// and save the spiking network with its provenance. Nothing is written unless every step succeeded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "common.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"

#ifdef SNN_HAVE_TORCH
#include "snn/conversion/thresholds.hpp"
#include "snn/conversion/torch_import.hpp"
#endif

namespace snnc {

namespace {

struct ConvertArgs {
  std::string model, out, data;
  std::string norm = "percentile";
  double percentile = 99.99;
  bool channelwise = false;
  std::vector<float> mean, std;
  std::vector<int64_t> input_shape;
  std::string neuron = "if";
  float beta = 0.9f;
  std::string reset = "subtract";
  float v_init = 0.5f;
  bool limit_given = false;
  RunOptions run;
};

constexpr int64_t kDefaultCalibrationImages = 1000;
constexpr int64_t kCheckImages = 256;   // real images for the faithfulness check
constexpr int64_t kRandomInputs = 16;  // without --data: N(0,1) inputs
constexpr double kFaithfulTolerance = 1e-4;

#ifdef SNN_HAVE_TORCH

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string theta_text(const snn::NeuronLayer& l) {
  const auto& t = l.threshold();
  if (t.size() == 1) return fmt(t[0]);
  const auto mm = std::minmax_element(t.begin(), t.end());
  return fmt(*mm.first) + ".." + fmt(*mm.second) + " (" + std::to_string(t.size()) + " channels)";
}

snn::Shape resolve_input_shape(const ConvertArgs& a, const snn::Dataset* data) {
  if (!a.input_shape.empty()) {
    if (a.input_shape.size() != 3)
      throw snn::Error("--input-shape needs 3 values C,H,W, got " + std::to_string(a.input_shape.size()));
    for (int64_t d : a.input_shape)
      if (d <= 0) throw snn::Error("--input-shape values must be positive");
    snn::Shape s(a.input_shape.begin(), a.input_shape.end());
    if (data && data->sample_shape() != s)
      throw snn::Error("--input-shape " + snn::to_string(s) + " differs from the images of " + a.data + " (" +
                       snn::to_string(data->sample_shape()) + ")");
    return s;
  }
  if (data) return data->sample_shape();
  throw snn::Error("the model's input shape is unknown: pass --input-shape C,H,W or --data");
}

snn::Preprocessing make_preprocessing(const ConvertArgs& a, const snn::Shape& input) {
  if (a.mean.empty() && a.std.empty()) return {};
  if (a.mean.empty() || a.std.empty()) throw snn::Error("--mean and --std go together: give both or neither");
  const size_t c = size_t(input[0]);
  if (a.mean.size() != c || a.std.size() != c)
    throw snn::Error("--mean has " + std::to_string(a.mean.size()) + " and --std " + std::to_string(a.std.size()) +
                     " values; the input has " + std::to_string(c) + " channel(s): give one value per channel");
  for (float s : a.std)
    if (!(s > 0.0f)) throw snn::Error("--std values must be positive");
  return {a.mean, a.std};
}

void run_convert(const ConvertArgs& a) {
  using namespace snn::conversion;
  // Calibration images: --limit if given, else a default that is plenty for percentiles.
  std::unique_ptr<snn::Dataset> data;
  if (!a.data.empty()) {
    RunOptions ro = a.run;
    ro.limit = a.limit_given ? a.run.limit : kDefaultCalibrationImages;
    data = std::make_unique<snn::Dataset>(open_dataset(a.data, ro));
    if (data->size() == 0) throw snn::Error(a.data + ": no images");
  }

  ImportOptions io;
  io.input_shape = resolve_input_shape(a, data.get());
  io.neuron.model = snn::parse_neuron_model(a.neuron);
  io.neuron.beta = io.neuron.model == snn::NeuronModel::LIF ? a.beta : 1.0f;
  io.neuron.reset = snn::parse_reset(a.reset);
  io.neuron.v_init = a.v_init;
  ImportReport report;
  snn::Network net = import_torchscript(a.model, io, &report);
  net.set_preprocessing(make_preprocessing(a, io.input_shape));

  // Thresholds of ReLU neurons come from data; clip and QCFS layers carry theirs.
  if (needs_data_thresholds(net) && !data)
    throw snn::Error(a.model + " has " + std::to_string(report.relu_layers) +
                     " ReLU layer(s) whose thresholds must come from data: pass --data (e.g. --data "
                     "fashion-mnist:train, or an IDX/CIFAR/HDF5 file of training images)");
  auto backend = open_backend(a.run);
  std::string norm_text = "none (all thresholds come from the model: clip/QCFS)";
  ThresholdReport thresholds;
  if (needs_data_thresholds(net)) {
    NormOptions no;
    no.method = parse_norm_method(a.norm);
    no.percentile = a.percentile;
    no.channelwise = a.channelwise;
    no.batch_size = a.run.batch_size;
    no.max_images = 0;  // the dataset is already limited
    Progress p("thresholds", progress_enabled(a.run));
    no.progress = p.fn();
    thresholds = set_thresholds(net, *backend, *data, no);
    norm_text = (no.method == NormMethod::Max ? std::string("max") : "percentile " + fmt(no.percentile)) +
                (no.channelwise ? ", per channel" : ", per layer") + ", " + std::to_string(thresholds.images) +
                " images of " + a.data;
  }

  // Faithfulness: the ANN view must reproduce LibTorch's forward of the same file. Compared on
  // preprocessed inputs, so the copy checked has no preprocessing of its own.
  snn::Tensor inputs;
  std::string inputs_text;
  if (data) {
    const int64_t n = std::min<int64_t>(kCheckImages, data->size());
    inputs = snn::preprocess(net, data->batch_images(0, n));
    inputs_text = std::to_string(n) + " images of " + a.data;
  } else {
    snn::Shape s = {kRandomInputs};
    s.insert(s.end(), io.input_shape.begin(), io.input_shape.end());
    inputs = snn::Tensor(s);
    std::mt19937 rng(0);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = nd(rng);
    inputs_text = std::to_string(kRandomInputs) + " random N(0,1) inputs (no --data given)";
  }
  snn::Network check = net;
  check.set_preprocessing({});
  const snn::Tensor ours = backend->forward_ann(check, inputs);
  const snn::Tensor ref = torchscript_forward(a.model, inputs);
  if (ours.shape() != ref.shape())
    throw snn::Error("faithfulness check failed: the ANN view gives outputs " + snn::to_string(ours.shape()) +
                     ", LibTorch " + snn::to_string(ref.shape()) + "; nothing written");
  const double diff = snn::max_abs_diff(ours, ref);
  if (!(diff < kFaithfulTolerance))
    throw snn::Error("faithfulness check failed: max |ANN view - LibTorch| = " + fmt(diff) + " on " + inputs_text +
                     " (must be < " + fmt(kFaithfulTolerance) + "); the import is not faithful, nothing written");

  auto& md = net.metadata();
  md["source_model"] = a.model;
  md["converter"] = std::string("snnc convert ") + snn::snnc_version() + " (TorchScript import, BN folding)";
  md["norm"] = norm_text;
  if (data) md["calibration_data"] = data->source.empty() ? a.data : data->source;
  md["batchnorms_folded"] = std::to_string(report.batchnorms_folded);
  md["neuron"] = a.neuron + (io.neuron.model == snn::NeuronModel::LIF ? " beta " + fmt(io.neuron.beta) : "") +
                 ", reset " + a.reset + ", v_init " + fmt(a.v_init);
  md["faithfulness_max_abs_diff"] = fmt(diff);
  md["faithfulness_inputs"] = inputs_text;
  md["command_line"] = command_line();
  snn::save_network(net, a.out);

  int64_t neurons = 0;
  for (int i : net.neuron_nodes()) neurons += snn::numel_of(net.output_shape(i));
  std::vector<std::string> notes;
  for (const auto& n : thresholds.notes)
    if (n.rfind("thresholds of", 0) != 0) notes.push_back(n);  // that one is the norm line already
  for (const auto& n : report.notes)
    if (n.rfind("batch norm", 0) != 0 && n.find("provisional") == std::string::npos) notes.push_back(n);

  if (a.run.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["output"] = a.out;
    j["input_shape"] = net.input_shape();
    j["preprocessing"] = {{"mean", net.preprocessing().mean}, {"std", net.preprocessing().std}};
    j["layers"] = net.size();
    j["neurons"] = neurons;
    j["parameters"] = net.parameter_count();
    j["batchnorms_folded"] = report.batchnorms_folded;
    j["max_pools"] = report.max_pools;
    if (report.max_pools > 0) j["max_pooling"] = "spiking max pooling: emits the increase of the largest running input sum";
    j["norm"] = norm_text;
    j["neuron"] = md["neuron"];
    for (int i : net.neuron_nodes()) {
      const snn::NeuronLayer& l = net.neuron(i);
      j["thresholds"].push_back({{"layer", l.name()},
                                 {"activation", snn::to_string(l.activation())},
                                 {"levels", l.levels()},
                                 {"threshold", l.threshold()},
                                 {"neurons", snn::numel_of(net.output_shape(i))}});
    }
    j["faithfulness"] = {{"max_abs_diff", diff}, {"inputs", inputs_text}, {"tolerance", kFaithfulTolerance}, {"passed", true}};
    j["notes"] = notes;
    j["torchscript_ops"] = report.ops;
    print_json(j);
    return;
  }
  if (a.run.quiet) return;
  std::printf("%s -> %s\n", a.model.c_str(), a.out.c_str());
  std::printf("  input %s", snn::to_string(net.input_shape()).c_str());
  if (!net.preprocessing().identity()) {
    std::printf(", normalised: mean");
    for (float m : net.preprocessing().mean) std::printf(" %g", m);
    std::printf(", std");
    for (float s : net.preprocessing().std) std::printf(" %g", s);
  }
  std::printf("\n  %d layers, %zu spiking layers, %lld neurons per image, %lld parameters\n", net.size(),
              net.neuron_nodes().size(), (long long)neurons, (long long)net.parameter_count());
  std::printf("  batch norms folded: %d\n", report.batchnorms_folded);
  if (report.max_pools > 0)
    std::printf("  max pooling: %d layer(s); spiking max pooling: emits the increase of the largest running input sum\n", report.max_pools);
  std::printf("  neurons: %s\n", md["neuron"].c_str());
  std::printf("  thresholds: %s\n", norm_text.c_str());
  for (int i : net.neuron_nodes()) {
    const snn::NeuronLayer& l = net.neuron(i);
    std::string act = snn::to_string(l.activation());
    if (l.activation() == snn::SourceActivation::QCFS) act += " L=" + std::to_string(l.levels());
    std::printf("    %-28s %-10s theta %s\n", l.name().c_str(), act.c_str(), theta_text(l).c_str());
  }
  for (const auto& n : notes) std::printf("  note: %s\n", n.c_str());
  std::printf("  faithfulness: max |ANN view - LibTorch| = %.3g on %s (< %g: ok)\n", diff, inputs_text.c_str(),
              kFaithfulTolerance);
}

#else

void run_convert(const ConvertArgs&) {
  throw snn::Error("snnc was built without LibTorch, so it cannot read TorchScript models; install libtorch-dev "
                   "and reconfigure (cmake -DSNN_WITH_TORCH=ON)");
}

#endif

}  // namespace

void register_convert(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a TorchScript CNN (.pt) into a spiking network (.snn.h5)");
  cmd->add_option("model", args->model, "TorchScript model (torch.jit.script or torch.jit.trace, saved with .save())")
      ->required();
  cmd->add_option("-o,--out", args->out, "Output file (.snn.h5)")->required();
  cmd->add_option("--data", args->data,
                  "Calibration images for the thresholds and the faithfulness check: fashion-mnist:train, "
                  "IDX/CIFAR/HDF5 file (first 1000 images unless --limit)");
  cmd->add_option("--norm", args->norm, "Threshold from the activations: max or percentile")
      ->check(CLI::IsMember({"max", "percentile"}));
  cmd->add_option("--percentile", args->percentile, "Percentile of the positive activations (default 99.99)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_flag("--channelwise", args->channelwise, "One threshold per channel instead of per layer");
  cmd->add_option("--mean", args->mean, "Per-channel input mean, comma separated (stored in the model)")->delimiter(',');
  cmd->add_option("--std", args->std, "Per-channel input std, comma separated")->delimiter(',');
  cmd->add_option("--input-shape", args->input_shape, "C,H,W of one image (default: from --data)")->delimiter(',');
  cmd->add_option("--neuron", args->neuron, "Neuron model: if or lif")->check(CLI::IsMember({"if", "lif"}));
  cmd->add_option("--beta", args->beta, "LIF leak factor in (0, 1] (default 0.9; ignored for if)");
  cmd->add_option("--reset", args->reset, "Reset after a spike: subtract or zero")
      ->check(CLI::IsMember({"subtract", "zero"}));
  cmd->add_option("--v-init", args->v_init, "Initial membrane potential as a fraction of the threshold (default 0.5)");
  add_run_options(cmd, args->run);
  cmd->callback([args, cmd] {
    args->limit_given = cmd->count("--limit") > 0;
    run_convert(*args);
  });
}

}  // namespace snnc
