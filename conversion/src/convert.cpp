// convert_model: import (any format), thresholds, faithfulness check, provenance (see convert.hpp).
#include "snn/conversion/convert.hpp"

#include <algorithm>
#include <random>
#include <sstream>

#include "snn/conversion/model_import.hpp"
#include "snn/conversion/reference_runtime.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"

namespace snn::conversion {

namespace {

constexpr int64_t kOutputCheckImages = 256;  // images for the end-to-end (logits, argmax) comparison
constexpr int64_t kRandomInputs = 16;        // without data: N(0,1) inputs

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

snn::Shape resolve_input_shape(const std::string& model, const ConvertOptions& o, const snn::Dataset* data) {
  if (!o.input_shape.empty()) {
    if (o.input_shape.size() != 3)
      throw snn::Error("input shape needs 3 values C,H,W, got " + std::to_string(o.input_shape.size()));
    for (int64_t d : o.input_shape)
      if (d <= 0) throw snn::Error("input shape values must be positive, got " + snn::to_string(o.input_shape));
    if (data && data->sample_shape() != o.input_shape)
      throw snn::Error("input shape " + snn::to_string(o.input_shape) + " differs from the images of " + o.data_label +
                       " (" + snn::to_string(data->sample_shape()) + ")");
    return o.input_shape;
  }
  if (data) return data->sample_shape();
  const snn::Shape exported = exported_input_shape(model);  // .pt2 and ONNX files record it
  if (!exported.empty()) return exported;
  throw snn::Error("the model's input shape is unknown: give the input shape (C,H,W) or " + o.data_option);
}

void check_preprocessing(const snn::Preprocessing& p, const snn::Shape& input) {
  if (p.mean.empty() && p.std.empty()) return;
  if (p.mean.empty() || p.std.empty()) throw snn::Error("mean and std go together: give both or neither");
  const size_t c = size_t(input[0]);
  if (p.mean.size() != c || p.std.size() != c)
    throw snn::Error("mean has " + std::to_string(p.mean.size()) + " and std " + std::to_string(p.std.size()) +
                     " values; the input has " + std::to_string(c) + " channel(s): give one value per channel");
  for (float s : p.std)
    if (!(s > 0.0f)) throw snn::Error("std values must be positive");
}

void check_options(const ConvertOptions& o) {
  if (!(o.faithfulness.tolerance >= 0)) throw snn::Error("check tolerance must be >= 0");
  if (!(o.faithfulness.max_moved_fraction >= 0 && o.faithfulness.max_moved_fraction <= 1))
    throw snn::Error("check moved fraction must be in [0, 1]");
  if (o.check_images <= 0) throw snn::Error("check images must be positive");
  if (o.neuron.model == snn::NeuronModel::LIF && !(o.neuron.beta > 0.0f && o.neuron.beta <= 1.0f))
    throw snn::Error("LIF beta must be in (0, 1], got " + fmt(o.neuron.beta));
  if (!(o.neuron.v_init >= 0.0f && o.neuron.v_init <= 1.0f))
    throw snn::Error("v_init must be a fraction of the threshold in [0, 1], got " + fmt(o.neuron.v_init));
}

// The check's inputs, preprocessed as the model sees them: real images where given, else N(0, 1).
snn::Tensor check_inputs_for(const snn::Network& shape_only, const snn::Dataset* data, const ConvertOptions& o,
                             std::string* text) {
  if (data) {
    const int64_t n = std::min<int64_t>(kOutputCheckImages, data->size());
    *text = std::to_string(n) + " images of " + o.data_label;
    return snn::preprocess(shape_only, data->batch_images(0, n));
  }
  snn::Shape s = {kRandomInputs};
  s.insert(s.end(), shape_only.input_shape().begin(), shape_only.input_shape().end());
  snn::Tensor inputs(s);
  std::mt19937 rng(0);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = nd(rng);
  *text = std::to_string(kRandomInputs) + " random N(0,1) inputs (no calibration data given)";
  return inputs;
}

void record_provenance(ConversionResult& r, const std::string& model_path, const snn::Dataset* data,
                       const ConvertOptions& o) {
  auto& md = r.network.metadata();
  md["source_model"] = model_path;
  md["converter"] = std::string("snnc convert ") + snn::snnc_version() + " (" + r.format + " import, BN folding)";
  md["source_format"] = r.format;
  if (!r.import.producer.empty()) md["source_producer"] = r.import.producer;
  md["norm"] = r.norm_text;
  if (data) md["calibration_data"] = data->source.empty() ? o.data_label : data->source;
  md["batchnorms_folded"] = std::to_string(r.import.batchnorms_folded);
  md["neuron"] = snn::to_string(o.neuron.model) +
                 (o.neuron.model == snn::NeuronModel::LIF ? " beta " + fmt(o.neuron.beta) : "") + ", reset " +
                 snn::to_string(o.neuron.reset) + ", v_init " + fmt(o.neuron.v_init);
  if (!r.checked) {
    md["faithfulness"] = o.check ? "not checked against a reference runtime: " + r.unchecked_reason
                                 : std::string("not checked (--no-check)");
    return;
  }
  const FaithfulnessReport& c = r.faithfulness;
  md["faithfulness"] = c.summary();
  md["faithfulness_reference"] = r.reference_runtime;
  md["faithfulness_inputs"] = r.check_inputs_text;
  md["faithfulness_tolerance"] =
      "relative " + fmt(o.faithfulness.tolerance) + ", quantised moved fraction " + fmt(o.faithfulness.max_moved_fraction);
  md["faithfulness_worst_rel_error"] = fmt(c.worst_rel_diff) + " at '" + c.worst_layer + "'";
  md["faithfulness_argmax_agreement"] = std::to_string(c.argmax_agree) + "/" + std::to_string(c.output_images);
  md["faithfulness_logits_max_abs_diff"] = fmt(c.output_max_abs_diff);
  if (c.quantised_layers)
    md["faithfulness_quantised_moved"] =
        fmt(c.worst_moved_fraction) + " per layer, " + fmt(c.worst_drift_moved_fraction) + " end to end";
}

// The check against the format's own runtime: LibTorch in process for TorchScript, torch / onnxruntime
// through the reference script for .pt2 / ONNX. False (with the reason) when no runtime is available.
bool check_against_reference(ConversionResult& r, const std::string& model_path, ModelFormat format,
                             const snn::Tensor& layer_inputs, const snn::Tensor& check_inputs, snn::Backend& backend,
                             const ConvertOptions& options) {
  snn::Network& net = r.network;
  if (format == ModelFormat::TorchScript) {  // import_model refused it unless the importer is linked in
    const TorchScriptHooks& torch = torchscript_hooks();
    r.reference_runtime = "LibTorch " + torch.version();
    r.faithfulness = check_layers(net, layer_inputs, r.import.references, backend, options.faithfulness);
    r.faithfulness.reference = r.reference_runtime;
    compare_outputs(net, check_inputs, torch.forward(model_path, check_inputs), backend, r.faithfulness);
    return true;
  }
  ReferenceRun run = run_reference(model_path, format, check_inputs, layer_inputs.dim(0), r.import.reference_names);
  if (!run.ran) {
    r.unchecked_reason = run.why_not;
    return false;
  }
  r.reference_runtime = run.runtime;
  r.import.references = std::move(run.values);
  r.faithfulness = check_layers(net, layer_inputs, r.import.references, backend, options.faithfulness);
  r.faithfulness.reference = r.reference_runtime;
  compare_outputs(net, check_inputs, run.output, backend, r.faithfulness);
  return true;
}

void set_data_thresholds(ConversionResult& r, const std::string& model_path, const snn::Dataset* data,
                         snn::Backend& backend, const ConvertOptions& options) {
  snn::Network& net = r.network;
  r.norm_text = "none (all thresholds come from the model: clip/QCFS)";
  if (!needs_data_thresholds(net)) return;
  if (!data)
    throw snn::Error(model_path + " has " + std::to_string(r.import.relu_layers) +
                     " ReLU layer(s) whose thresholds must come from data: pass " + options.data_option +
                     " (e.g. fashion-mnist:train, or an IDX/CIFAR/HDF5 file of training images)");
  r.thresholds = set_thresholds(net, backend, *data, options.norm);
  const NormOptions& no = options.norm;
  r.norm_text = (no.method == NormMethod::Percentile   ? "percentile " + fmt(no.percentile)
                 : no.method == NormMethod::MinError ? "least error for T = " + std::to_string(no.timesteps)
                                                     : std::string("max")) +
                (no.channelwise ? ", per channel" : ", per layer") + ", " + std::to_string(r.thresholds.images) +
                " images of " + options.data_label;
}

}  // namespace

ConversionResult convert_model(const std::string& model_path, const snn::Dataset* data, snn::Backend& backend,
                               const ConvertOptions& options) {
  check_options(options);
  if (data && data->size() == 0) throw snn::Error(options.data_label + ": no images");
  ConversionResult r;
  const ModelFormat format = check_importable(model_path);
  r.format = to_string(format);
  ImportOptions io;
  io.input_shape = resolve_input_shape(model_path, options, data);
  io.neuron = options.neuron;
  if (io.neuron.model == snn::NeuronModel::IF) io.neuron.beta = 1.0f;
  check_preprocessing(options.preprocessing, io.input_shape);

  snn::Network shape_only(io.input_shape);
  shape_only.set_preprocessing(options.preprocessing);
  const snn::Tensor check_inputs = check_inputs_for(shape_only, data, options, &r.check_inputs_text);
  const snn::Tensor layer_inputs = check_inputs.slice0(0, std::min(options.check_images, check_inputs.dim(0)));
  if (options.check && format == ModelFormat::TorchScript) io.reference_inputs = layer_inputs;

  r.network = import_model(model_path, io, &r.import);
  snn::Network& net = r.network;
  net.set_preprocessing(options.preprocessing);
  try {
    snn::check_finite_parameters(net);
  } catch (const snn::Error& e) {
    throw snn::Error(model_path + ": " + e.what());
  }
  set_data_thresholds(r, model_path, data, backend, options);

  // Faithfulness: every layer against the runtime's own values, then the outputs end to end.
  if (options.check) {
    r.checked = check_against_reference(r, model_path, format, layer_inputs, check_inputs, backend, options);
    if (r.checked && !r.faithfulness.passed())
      throw snn::Error("faithfulness check failed: " + r.faithfulness.failure() + " (" + r.check_inputs_text +
                       ", reference " + r.reference_runtime + "); the import is not faithful, nothing written. If "
                       "you know the difference is harmless: --check-tolerance / --check-moved, or --no-check");
  }
  record_provenance(r, model_path, data, options);

  for (const auto& n : r.thresholds.notes)
    if (n.rfind("thresholds of", 0) != 0) r.notes.push_back(n);  // that one is the norm line already
  for (const auto& n : r.import.notes)
    if (n.rfind("batch norm", 0) != 0 && n.find("provisional") == std::string::npos) r.notes.push_back(n);
  return r;
}

}  // namespace snn::conversion
