#include "snn/layers/neuron.hpp"

#include <cmath>
#include <sstream>

#include "snn/error.hpp"

namespace snn {

std::string to_string(NeuronModel m) { return m == NeuronModel::IF ? "if" : "lif"; }
std::string to_string(Reset r) { return r == Reset::Subtract ? "subtract" : "zero"; }
std::string to_string(SourceActivation a) {
  switch (a) {
    case SourceActivation::ReLU: return "relu";
    case SourceActivation::Clip: return "clip";
    case SourceActivation::QCFS: return "qcfs";
  }
  return "?";
}
std::string to_string(Spikes s) { return s == Spikes::Binary ? "binary" : "signed"; }
Spikes parse_spikes(const std::string& s) {
  if (s == "binary") return Spikes::Binary;
  if (s == "signed") return Spikes::Signed;
  throw Error("unknown spike kind '" + s + "' (expected binary or signed, or auto in the converters)");
}
Spikes resolve_spikes(const std::string& s, Reset reset, const std::string& option) {
  if (s == "auto") return reset == Reset::Subtract ? Spikes::Signed : Spikes::Binary;
  const Spikes spikes = parse_spikes(s);
  if (spikes == Spikes::Signed && reset != Reset::Subtract)
    throw Error(option + " signed needs reset by subtraction (a negative spike takes back a positive one's θ)");
  return spikes;
}
NeuronModel parse_neuron_model(const std::string& s) {
  if (s == "if") return NeuronModel::IF;
  if (s == "lif") return NeuronModel::LIF;
  throw Error("unknown neuron model '" + s + "' (expected if or lif)");
}
Reset parse_reset(const std::string& s) {
  if (s == "subtract") return Reset::Subtract;
  if (s == "zero") return Reset::Zero;
  throw Error("unknown reset '" + s + "' (expected subtract or zero)");
}
SourceActivation parse_activation(const std::string& s) {
  if (s == "relu") return SourceActivation::ReLU;
  if (s == "clip") return SourceActivation::Clip;
  if (s == "qcfs") return SourceActivation::QCFS;
  throw Error("unknown activation '" + s + "' (expected relu, clip or qcfs)");
}

NeuronLayer::NeuronLayer(std::string name, int64_t channels, std::vector<float> threshold,
                         SourceActivation activation, int levels, NeuronConfig config)
    : Layer(std::move(name)), channels_(channels), activation_(activation), levels_(levels) {
  if (channels_ <= 0) fail("channel count must be positive");
  if (activation_ == SourceActivation::QCFS && levels_ <= 0) fail("QCFS activation needs levels L > 0");
  set_threshold(std::move(threshold));
  set_config(config);
}

void NeuronLayer::set_threshold(std::vector<float> threshold) {
  if (threshold.size() != 1 && static_cast<int64_t>(threshold.size()) != channels_)
    fail("threshold has " + std::to_string(threshold.size()) + " values; expected 1 or " + std::to_string(channels_));
  for (float t : threshold)
    if (!(t > 0.0f) || !std::isfinite(t)) fail("threshold must be positive and finite, got " + std::to_string(t));
  threshold_ = std::move(threshold);
}

void NeuronLayer::set_config(const NeuronConfig& config) {
  if (config.model == NeuronModel::LIF && !(config.beta > 0.0f && config.beta <= 1.0f))
    fail("LIF leak beta must be in (0, 1], got " + std::to_string(config.beta));
  if (!std::isfinite(config.v_init)) fail("initial membrane must be finite");
  // A negative spike takes back a positive one's θ: only meaningful when spikes subtract θ.
  if (config.spikes == Spikes::Signed && config.reset != Reset::Subtract)
    fail("signed spikes need reset by subtraction (--reset subtract)");
  if (config.max_spikes != NeuronConfig::kNoSpikeCap) {
    if (config.spikes != Spikes::Signed) fail("a spike cap (max_spikes) needs signed spikes");
    if (!(config.max_spikes >= 1.0f && config.max_spikes <= float(1 << 24) &&
          config.max_spikes == std::floor(config.max_spikes)))
      fail("max_spikes must be a whole number in [1, 2^24], got " + std::to_string(config.max_spikes));
  }
  if (config.threshold_scale != 1.0f) {
    if (config.spikes != Spikes::Signed) fail("a threshold scale needs signed spikes");
    if (!(config.threshold_scale > 0.0f && config.threshold_scale <= 1e6f))
      fail("threshold_scale must be in (0, 1e6], got " + std::to_string(config.threshold_scale));
  }
  config_ = config;
}

void NeuronLayer::check_bias(const Tensor& bias, bool constant_over_time) const {
  if (bias.rank() != 2 || bias.dim(1) != channels_ || bias.dim(0) < 1)
    fail("temporal bias must be [T, " + std::to_string(channels_) + "], got " + to_string(bias.shape()));
  if (constant_over_time && bias.dim(0) != 1) fail("a bias constant over time has one row");
  for (int64_t i = 0; i < bias.numel(); ++i)
    if (!std::isfinite(bias[i])) fail("temporal bias contains a non-finite value");
}

void NeuronLayer::set_bias(Tensor bias, bool constant_over_time) {
  check_bias(bias, constant_over_time);
  bias_ = std::move(bias);
  bias_constant_ = constant_over_time;
}

void NeuronLayer::clear_bias() {
  bias_ = Tensor();
  bias_constant_ = false;
}

Shape NeuronLayer::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1 || inputs[0].empty()) fail("expects one input");
  if (inputs[0][0] != channels_)
    fail("input " + to_string(inputs[0]) + " has " + std::to_string(inputs[0][0]) + " channels, layer has " +
         std::to_string(channels_));
  return inputs[0];
}

std::string NeuronLayer::summary() const {
  std::ostringstream os;
  os << to_string(config_.model);
  if (config_.model == NeuronModel::LIF) os << "(beta=" << config_.beta << ")";
  os << " reset=" << to_string(config_.reset);
  if (config_.spikes == Spikes::Signed) os << " spikes=signed";
  if (config_.max_spikes != NeuronConfig::kNoSpikeCap) os << "(max " << int64_t(config_.max_spikes) << ")";
  if (config_.threshold_scale != 1.0f) os << " snn_theta=" << config_.threshold_scale << "*theta";
  os << " act=" << to_string(activation_);
  if (activation_ == SourceActivation::QCFS) os << "(L=" << levels_ << ")";
  if (threshold_.size() == 1) {
    os << " theta=" << threshold_[0];
  } else {
    float lo = threshold_[0], hi = threshold_[0];
    for (float t : threshold_) lo = std::min(lo, t), hi = std::max(hi, t);
    os << " theta=[" << lo << ".." << hi << "] per-channel";
  }
  if (bias_.empty()) os << " bias=none";
  else if (bias_constant_) os << " bias=constant";
  else os << " bias=T" << bias_.dim(0);
  return os.str();
}

LayerRecord NeuronLayer::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.tensors["threshold"] = Tensor({int64_t(threshold_.size())}, threshold_);
  if (!bias_.empty()) r.tensors["bias"] = bias_;
  r.numbers = {{"channels", double(channels_)},  {"levels", double(levels_)},
               {"beta", double(config_.beta)},    {"v_init", double(config_.v_init)},
               {"bias_constant", bias_constant_ ? 1.0 : 0.0}};
  r.strings = {{"model", to_string(config_.model)},
               {"reset", to_string(config_.reset)},
               {"activation", to_string(activation_)}};
  // Written only when signed, so that binary networks stay readable by earlier snnc versions (a signed
  // network raises the file's format version: model_file.cpp).
  if (config_.spikes == Spikes::Signed) r.strings["spikes"] = to_string(config_.spikes);
  if (config_.max_spikes != NeuronConfig::kNoSpikeCap) r.numbers["max_spikes"] = double(config_.max_spikes);
  if (config_.threshold_scale != 1.0f) r.numbers["threshold_scale"] = double(config_.threshold_scale);
  return r;
}

std::unique_ptr<Layer> NeuronLayer::from_record(const LayerRecord& r) {
  NeuronConfig cfg;
  cfg.model = parse_neuron_model(r.string("model"));
  cfg.reset = parse_reset(r.string("reset"));
  cfg.beta = float(r.number("beta"));
  cfg.v_init = float(r.number("v_init"));
  auto spikes = r.strings.find("spikes");
  if (spikes != r.strings.end()) cfg.spikes = parse_spikes(spikes->second);
  if (r.numbers.count("max_spikes")) cfg.max_spikes = float(r.count("max_spikes"));
  if (r.numbers.count("threshold_scale")) cfg.threshold_scale = float(r.number("threshold_scale"));
  const Tensor& th = r.tensor("threshold");
  auto layer = std::make_unique<NeuronLayer>(r.name, r.count("channels"), th.values(),
                                             parse_activation(r.string("activation")), int(r.count("levels")), cfg);
  auto it = r.tensors.find("bias");
  if (it != r.tensors.end()) layer->set_bias(it->second, r.number_or("bias_constant", 0) != 0);
  return layer;
}

namespace {
const bool registered_neuron = register_layer_type("neuron", NeuronLayer::from_record);
}  // namespace

}  // namespace snn
