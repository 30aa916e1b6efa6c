#include "snn/conversion/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <random>

#include "snn/conversion/auto_calibration.hpp"
#include "snn/conversion/ftbc.hpp"
#include "snn/conversion/levels_calibration.hpp"
#include "snn/conversion/light_calibration.hpp"
#include "snn/conversion/rts_shift.hpp"
#include "snn/error.hpp"
#include "snn/limits.hpp"

namespace snn::conversion {

namespace {
std::map<std::string, CalibratorFactory>& registry() {
  static std::map<std::string, CalibratorFactory> r = {
      {"ftbc", [] { return std::make_unique<FtbcCalibrator>("ftbc"); }},
      {"ftbc-paper", [] { return std::make_unique<FtbcCalibrator>("ftbc-paper", "paper"); }},
      {"ftbc-exact", [] { return std::make_unique<FtbcCalibrator>("ftbc-exact", "exact"); }},
      {"ftbc-auto", [] { return std::make_unique<AutoCalibrator>(); }},
      {"levels", [] { return std::make_unique<LevelsCalibrator>(); }},
      {"light", [] { return std::make_unique<LightCalibrator>(); }},
      {"rts", [] { return std::make_unique<RtsShiftCalibrator>(); }},
  };
  return r;
}
std::mutex registry_mutex;
}  // namespace

void register_calibrator(const std::string& name, CalibratorFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[name] = std::move(factory);
}

std::vector<std::string> calibrator_names() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<std::string> names;
  for (const auto& kv : registry()) names.push_back(kv.first);
  return names;
}

std::unique_ptr<Calibrator> make_calibrator(const std::string& name) {
  CalibratorFactory f;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto it = registry().find(name);
    if (it != registry().end()) f = it->second;
  }
  if (!f) {
    std::string known;
    for (const auto& n : calibrator_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown calibration method '" + name + "' (known: " + known + ")");
  }
  return f();
}

std::vector<std::string> Calibrator::options_used() const {
  return {"--data", "--alpha", "--batches", "--batch-size", "--iters", "--seed"};
}

void require_options_used(const std::vector<std::string>& methods, const std::map<std::string, std::string>& given) {
  for (const auto& [option, spelled] : given) {
    std::string takes;
    bool used = false;
    for (const auto& m : methods) {
      if (m == "none" || m == "model") continue;
      const std::vector<std::string> opts = make_calibrator(m)->options_used();
      used = used || std::find(opts.begin(), opts.end(), option) != opts.end();
    }
    if (used) continue;
    std::string names;
    for (const auto& m : methods) names += (names.empty() ? "" : ", ") + m;
    throw Error(spelled + " has no effect on " + (methods.size() == 1 ? "method " : "methods ") + names +
                " (leave it out)");
  }
}

void check_calibration_options(const CalibrationOptions& o, const Dataset* data) {
  check_range(o.timesteps, limits::kTimesteps, "--T");
  check_range(o.alpha, limits::kAlpha, "--alpha");
  check_range(o.batches, limits::kCalibrationBatches, "--batches");
  check_range(o.batch_size, limits::kBatchSize, "--batch-size");
  check_range(o.iters, limits::kCalibrationIters, "--iters");
  if (data)
    require(o.batches * o.batch_size <= data->size(),
            "--batches " + std::to_string(o.batches) + " x --batch-size " + std::to_string(o.batch_size) + " = " +
                std::to_string(o.batches * o.batch_size) + " calibration images, but '" + data->source + "' has " +
                std::to_string(data->size()));
}

std::vector<int64_t> calibration_order(const CalibrationOptions& o, int64_t dataset_size) {
  std::vector<int64_t> idx(static_cast<size_t>(dataset_size));
  std::iota(idx.begin(), idx.end(), 0);
  std::mt19937_64 rng(o.seed);
  std::shuffle(idx.begin(), idx.end(), rng);
  return idx;
}

std::vector<std::vector<int64_t>> calibration_batches(const CalibrationOptions& o, int64_t dataset_size) {
  const std::vector<int64_t> idx = calibration_order(o, dataset_size);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t b = 0; b < o.batches; ++b)
    batches.emplace_back(idx.begin() + b * o.batch_size, idx.begin() + (b + 1) * o.batch_size);
  return batches;
}

Tensor gather_images(const Dataset& data, const std::vector<int64_t>& indices) {
  Shape s = data.images.shape();
  const int64_t per = data.images.numel() / s[0];
  s[0] = int64_t(indices.size());
  Tensor out(s);
  for (size_t i = 0; i < indices.size(); ++i)
    std::copy(data.images.data() + indices[i] * per, data.images.data() + (indices[i] + 1) * per,
              out.data() + int64_t(i) * per);
  return out;
}

Dataset dataset_subset(const Dataset& data, const std::vector<int64_t>& indices, const std::string& part) {
  Dataset d;
  d.images = gather_images(data, indices);
  for (int64_t i : indices) d.labels.push_back(data.labels.empty() ? 0 : data.labels[size_t(i)]);
  d.num_classes = data.num_classes;
  d.source = data.source + " (" + part + ")";
  return d;
}

std::vector<int64_t> calibration_indices(const CalibrationOptions& opts, int64_t dataset_size) {
  std::vector<int64_t> all;
  for (const auto& b : calibration_batches(opts, dataset_size)) all.insert(all.end(), b.begin(), b.end());
  return all;
}

std::vector<int64_t> share_of_batch(const std::vector<int64_t>& batch, const Share& share) {
  return std::vector<int64_t>(batch.begin() + share.first, batch.begin() + share.last);
}

std::map<std::string, std::string> calibration_parameters(const CalibrationOptions& o, const Dataset& data) {
  return {{"T", std::to_string(o.timesteps)},        {"alpha", std::to_string(o.alpha)},
          {"batches", std::to_string(o.batches)},    {"batch_size", std::to_string(o.batch_size)},
          {"iters", std::to_string(o.iters)},        {"seed", std::to_string(o.seed)},
          {"data", data.source}};
}

void record_calibration(Network& net, const CalibrationReport& r) {
  for (auto it = net.metadata().begin(); it != net.metadata().end();)
    it = it->first.rfind("calibration", 0) == 0 ? net.metadata().erase(it) : std::next(it);
  net.metadata()["calibration"] = r.method;
  net.metadata()["calibration.seconds"] = std::to_string(r.seconds);
  net.metadata()["calibration.images"] = std::to_string(r.images);
  for (const auto& [k, v] : r.parameters) net.metadata()["calibration." + k] = v;
}

void store_biases(const Program& program, Network& net) {
  for (int i : net.neuron_nodes()) {
    bool constant = false;
    Tensor bias = program.neuron_bias(i, &constant);
    if (bias.empty()) net.neuron(i).clear_bias();
    else net.neuron(i).set_bias(std::move(bias), constant);
  }
}

void clear_calibration(Network& net) {
  for (int i : net.neuron_nodes()) {
    NeuronLayer& layer = net.neuron(i);
    layer.clear_bias();
    NeuronConfig cfg = layer.config();  // what "levels" sets
    cfg.threshold_scale = 1.0f;
    cfg.max_spikes = NeuronConfig::kNoSpikeCap;
    layer.set_config(cfg);
  }
  for (auto it = net.metadata().begin(); it != net.metadata().end();)
    it = it->first.rfind("calibration", 0) == 0 ? net.metadata().erase(it) : std::next(it);
}

}  // namespace snn::conversion
