// snnc convert MODEL -o OUT.snn.h5 [--data CALIB]: import a CNN (.pt2 from torch.export, ONNX, or
// TorchScript, recognised by content; BN folded), set the thresholds of its ReLU neurons from
// calibration data, check the import against the format's own runtime layer by layer (faithfulness.hpp,
// reference_runtime.hpp), and save the spiking network with its provenance. Nothing is written unless
// every step succeeded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common.hpp"
#include "parallel.hpp"
#include "option_checks.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"
#include "snn/path_checks.hpp"

#include "snn/conversion/convert.hpp"
#include "snn/conversion/model_import.hpp"

namespace snnc {

namespace {

struct ConvertArgs {
  std::string model, out, data;
  std::string norm = "percentile";
  double percentile = 99.99;
  int64_t norm_timesteps = 0;
  bool channelwise = false;
  std::vector<float> mean, std;
  std::vector<int64_t> input_shape;
  std::string neuron = "if";
  float beta = 0.9f;
  std::string reset = "subtract";
  float v_init = 0.5f;
  std::string spikes = "auto";
  bool limit_given = false;
  bool no_check = false;
  double check_tolerance = 1e-3;
  double check_moved = 1e-3;
  int64_t check_images = 16;
  RunOptions run;
};

constexpr int64_t kDefaultCalibrationImages = 1000;

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

// The options' own checks, naming the flags (convert_model checks again, in API terms).
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
  const snn::Shape exported = snn::conversion::exported_input_shape(a.model);  // .pt2 / ONNX record it
  if (!exported.empty()) return exported;
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

// Neurons in the network: the elements of every neuron layer's output.
int64_t neuron_count(const snn::Network& net) {
  int64_t n = 0;
  for (int i : net.neuron_nodes()) n += snn::numel_of(net.output_shape(i));
  return n;
}

// The report of a finished conversion: one JSON object (--json).
void report_json(const ConvertArgs& a, const snn::conversion::ConversionResult& result) {
  using namespace snn::conversion;
  const snn::Network& net = result.network;
  const FaithfulnessReport& check = result.faithfulness;
  const std::string& norm_text = result.norm_text;
  const std::string& inputs_text = result.check_inputs_text;
  const std::vector<std::string>& notes = result.notes;
  const ImportReport& report = result.import;
  const auto& md = net.metadata();
  const int64_t neurons = neuron_count(net);

  nlohmann::json j;
  j["model"] = a.model;
  j["format"] = result.format;
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
  j["neuron"] = md.at("neuron");
  for (int i : net.neuron_nodes()) {
    const snn::NeuronLayer& l = net.neuron(i);
    j["thresholds"].push_back({{"layer", l.name()},
                               {"activation", snn::to_string(l.activation())},
                               {"levels", l.levels()},
                               {"threshold", l.threshold()},
                               {"neurons", snn::numel_of(net.output_shape(i))}});
  }
  if (a.no_check) {
    j["faithfulness"] = {{"checked", false}, {"reason", "--no-check"}};
  } else if (!result.checked) {
    j["faithfulness"] = {{"checked", false}, {"reason", "no reference runtime: " + result.unchecked_reason}};
  } else {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& f : check.nodes)
      layers.push_back({{"layer", f.name},           {"type", f.type},
                        {"checked", f.checked},      {"quantised", f.quantised},
                        {"scale", f.scale},          {"max_abs_diff", f.max_abs_diff},
                        {"rel_diff", f.rel_diff},    {"moved_fraction", f.moved_fraction},
                        {"drift_rel", f.drift_rel},  {"drift_moved_fraction", f.drift_moved_fraction}});
    j["faithfulness"] = {{"checked", true},
                         {"passed", check.passed()},
                         {"inputs", inputs_text},
                         {"reference", result.reference_runtime},
                         {"layer_images", check.layer_images},
                         {"tolerance", a.check_tolerance},
                         {"max_moved_fraction", a.check_moved},
                         {"layers_checked", check.checked},
                         {"layers_unchecked", check.unchecked},
                         {"worst_rel_diff", check.worst_rel_diff},
                         {"worst_layer", check.worst_layer},
                         {"quantised_layers", check.quantised_layers},
                         {"worst_moved_fraction", check.worst_moved_fraction},
                         {"worst_drift_moved_fraction", check.worst_drift_moved_fraction},
                         {"output_images", check.output_images},
                         {"output_max_abs_diff", check.output_max_abs_diff},
                         {"output_rel_diff", check.output_rel_diff},
                         {"argmax_agree", check.argmax_agree},
                         {"layers", layers}};
  }
  j["macs_per_image"] = net.macs_per_sample();
  j["notes"] = notes;
  j["torchscript_ops"] = report.ops;
  print_json(j);
}

// The report of a finished conversion, for a person.
void report_text(const ConvertArgs& a, const snn::conversion::ConversionResult& result) {
  using namespace snn::conversion;
  const snn::Network& net = result.network;
  const FaithfulnessReport& check = result.faithfulness;
  const std::string& norm_text = result.norm_text;
  const std::string& inputs_text = result.check_inputs_text;
  const std::vector<std::string>& notes = result.notes;
  const ImportReport& report = result.import;
  const auto& md = net.metadata();
  const int64_t neurons = neuron_count(net);

  std::printf("%s (%s) -> %s\n", a.model.c_str(), result.format.c_str(), a.out.c_str());
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
  std::printf("  neurons: %s\n", md.at("neuron").c_str());
  std::printf("  thresholds: %s\n", norm_text.c_str());
  for (int i : net.neuron_nodes()) {
    const snn::NeuronLayer& l = net.neuron(i);
    std::string act = snn::to_string(l.activation());
    if (l.activation() == snn::SourceActivation::QCFS) act += " L=" + std::to_string(l.levels());
    std::printf("    %-28s %-10s theta %s\n", l.name().c_str(), act.c_str(), theta_text(l).c_str());
  }
  for (const auto& n : notes) std::printf("  note: %s\n", n.c_str());
  if (a.no_check)
    std::printf("  faithfulness: not checked (--no-check)\n");
  else if (!result.checked)
    std::printf("  faithfulness: NOT CHECKED against a reference runtime: %s\n", result.unchecked_reason.c_str());
  else
    std::printf("  faithfulness: ok against %s: %s (%s)\n", result.reference_runtime.c_str(), check.summary().c_str(),
                inputs_text.c_str());
}

void run_convert(const ConvertArgs& a) {
  using namespace snn::conversion;
  snn::check_path_length(a.model, "model file");  // "too long", not "cannot open"
  {
    std::vector<std::string> inputs = {a.model};
    for (const auto& f : dataset_inputs(a.data)) inputs.push_back(f);
    check_output(a.out, inputs);
  }
  snn::conversion::check_importable(a.model);  // before the data is read: a format this build cannot take
  // Calibration images: --limit if given, else a default that is plenty for percentiles.
  std::unique_ptr<snn::Dataset> data;
  if (!a.data.empty()) {
    RunOptions ro = a.run;
    ro.limit = a.limit_given ? a.run.limit : kDefaultCalibrationImages;
    data = std::make_unique<snn::Dataset>(open_dataset(a.data, ro));
    if (data->size() == 0) throw snn::Error(a.data + ": no images");
  }

  ConvertOptions co;
  co.input_shape = resolve_input_shape(a, data.get());
  co.preprocessing = make_preprocessing(a, co.input_shape);
  co.neuron.model = snn::parse_neuron_model(a.neuron);
  co.neuron.beta = a.beta;
  co.neuron.reset = snn::parse_reset(a.reset);
  co.neuron.v_init = a.v_init;
  co.neuron.spikes = snn::resolve_spikes(a.spikes, co.neuron.reset, "--spikes");
  co.norm.method = parse_norm_method(a.norm);
  co.norm.percentile = a.percentile;
  co.norm.timesteps = a.norm_timesteps;
  if (co.norm.method == NormMethod::MinError && a.norm_timesteps < 1)
    throw snn::Error("--norm error needs --norm-T (the number of timesteps the thresholds are chosen for)");
  co.norm.channelwise = a.channelwise;
  co.norm.batch_size = a.run.batch_size;
  co.norm.max_images = 0;  // the dataset is already limited
  co.check = !a.no_check;
  co.faithfulness.tolerance = a.check_tolerance;
  co.faithfulness.max_moved_fraction = a.check_moved;
  co.check_images = a.check_images;
  co.data_label = a.data;
  auto backend = open_backend(a.run);
  Progress p("thresholds", progress_enabled(a.run));
  co.norm.progress = p.fn();
  ConversionResult result = convert_model(a.model, data.get(), *backend, co);
  snn::Network& net = result.network;
  if (data) check_readout(net, *data, a.data);
  auto& md = result.network.metadata();
  md["command_line"] = command_line();
  snn::save_network(net, a.out);

  if (a.run.json) return report_json(a, result);
  if (!a.run.quiet) report_text(a, result);
}

}  // namespace

void register_convert(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a CNN (.pt2, ONNX or TorchScript) into a spiking network (.snn.h5)");
  cmd->add_option("model", args->model,
                  "The CNN: torch.export.save (.pt2), torch.onnx.export (.onnx) or TorchScript (torch.jit.script/"
                  "trace .save()); the format is recognised by content")
      ->required();
  cmd->add_option("-o,--out", args->out, "Output file (.snn.h5)")->required();
  cmd->add_option("--data", args->data,
                  "Calibration images for the thresholds and the faithfulness check: fashion-mnist:train, "
                  "IDX/CIFAR/HDF5 file (first 1000 images unless --limit)");
  cmd->add_option("--norm", args->norm,
                  "Threshold from the activations: max, percentile, or error (the least quantisation error over "
                  "--norm-T steps)")
      ->check(CLI::IsMember({"max", "percentile", "error"}));
  cmd->add_option("--norm-T", args->norm_timesteps, "Timesteps the error-minimising thresholds are chosen for")
      ->check(whole_in(1, 1 << 20));
  cmd->add_option("--percentile", args->percentile, "Percentile of the positive activations (default 99.99)")
      ->check(real_in(0.0, 100.0, true));
  cmd->add_flag("--channelwise", args->channelwise, "One threshold per channel instead of per layer");
  cmd->add_option("--mean", args->mean, "Per-channel input mean, comma separated (stored in the model)")->delimiter(',')
      ->check(real_in(-1e6, 1e6));
  cmd->add_option("--std", args->std, "Per-channel input std, comma separated")->delimiter(',')
      ->check(real_in(0.0, 1e6, true));
  cmd->add_option("--input-shape", args->input_shape, "C,H,W of one image (default: from --data)")->delimiter(',')
      ->check(whole_in(1, 1 << 20));
  cmd->add_option("--neuron", args->neuron, "Neuron model: if or lif")->check(CLI::IsMember({"if", "lif"}));
  cmd->add_option("--beta", args->beta, "LIF leak factor in (0, 1] (default 0.9; ignored for if)")
      ->check(real_in(0.0, 1.0, true));
  cmd->add_option("--reset", args->reset, "Reset after a spike: subtract or zero")
      ->check(CLI::IsMember({"subtract", "zero"}));
  cmd->add_option("--v-init", args->v_init, "Initial membrane potential as a fraction of the threshold (default 0.5)")
      ->check(real_in(0.0, 1.0));
  cmd->add_option("--spikes", args->spikes,
                  "Spikes: signed (−θ when a neuron has fired more than its summed input warrants, so its net "
                  "output tracks the CNN's activation step by step), binary (0 or θ), or auto (default: signed "
                  "with --reset subtract, binary with --reset zero)")
      ->check(CLI::IsMember({"auto", "binary", "signed"}));
  cmd->add_flag("--no-check", args->no_check,
                "Skip the faithfulness check against the format's runtime (LibTorch, torch, onnxruntime; not recommended)");
  cmd->add_option("--check-tolerance", args->check_tolerance,
                   "Faithfulness: largest difference from the reference runtime per layer, relative to the layer's largest "
                   "value (default 1e-3)")
      ->check(real_in(0.0, 1e6));
  cmd->add_option("--check-moved", args->check_moved,
                  "Faithfulness: largest fraction of a quantised (QCFS) layer's outputs that may move by a level "
                  "(default 1e-3)")
      ->check(real_in(0.0, 1.0));
  cmd->add_option("--check-images", args->check_images,
                  "Faithfulness: images for the layer-by-layer check (default 16; logits are compared on up to 256)")
      ->check(whole_in(1, 4096));
  add_run_options(cmd, args->run);
  cmd->callback([args, cmd] {
    single_process_only("convert");
    args->limit_given = cmd->count("--limit") > 0;
    run_convert(*args);
  });
}

}  // namespace snnc
