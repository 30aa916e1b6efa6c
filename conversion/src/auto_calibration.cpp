#include "snn/conversion/auto_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "snn/conversion/ftbc.hpp"
#include "snn/error.hpp"
#include "snn/sweep.hpp"

namespace snn::conversion {

namespace {

constexpr int64_t kHeldOut = 1000;     // held-out images at most
constexpr int64_t kMinHeldOut = 100;   // fewer could not tell the candidates apart
const std::pair<const char*, FtbcVariant> kCandidates[] = {
    {"ftbc", FtbcVariant::Fixed}, {"ftbc-paper", FtbcVariant::Paper}, {"ftbc-exact", FtbcVariant::Exact}};

}  // namespace

std::vector<int64_t> held_out_indices(const CalibrationOptions& opts, int64_t dataset_size, int64_t count) {
  const std::vector<int64_t> order = calibration_order(opts, dataset_size);
  return std::vector<int64_t>(order.end() - std::min<int64_t>(count, dataset_size), order.end());
}

std::vector<std::pair<int64_t, int64_t>> doubling_ranges(int64_t timesteps) {
  std::vector<std::pair<int64_t, int64_t>> r;
  for (int64_t first = 1; first <= timesteps;) {
    const int64_t last = std::min(timesteps, std::max<int64_t>(first, 2 * (first - 1)));
    r.emplace_back(first, last);
    first = last + 1;
  }
  return r;
}

CalibrationReport AutoCalibrator::calibrate(Network& net, Backend& backend, const Dataset& data,
                                            const CalibrationOptions& opts) const {
  check_calibration_options(opts, &data);
  const auto start = std::chrono::steady_clock::now();
  const int64_t fit = opts.batches * opts.batch_size;
  const int64_t held = std::min(kHeldOut, data.size() - fit);
  require(held >= kMinHeldOut, "ftbc-auto: needs " + std::to_string(kMinHeldOut) + " held-out images besides the " +
                                   std::to_string(fit) + " it fits on, but '" + data.source + "' has " +
                                   std::to_string(data.size()) + " (fewer --batches, or more calibration data)");
  const std::vector<int64_t> held_idx = held_out_indices(opts, data.size(), held);
  Dataset held_out;
  held_out.images = gather_images(data, held_idx);
  for (int64_t i : held_idx) held_out.labels.push_back(data.labels[size_t(i)]);
  held_out.num_classes = data.num_classes;
  held_out.source = data.source + " (held out)";

  // Range by range: each candidate variant calibrates the range's steps (batches x passes on the fit
  // images, the earlier steps keeping the rows chosen for them, so that it corrects the state they
  // really leave), and the one that does best on the held-out images keeps its rows.
  Network chosen = net;
  clear_calibration(chosen);
  std::string choices, scores;
  for (const auto& [first, last] : doubling_ranges(opts.timesteps)) {
    double best = -1.0;
    Network best_net;
    std::string best_name;
    const std::string range = "t" + std::to_string(first) + "-" + std::to_string(last);
    scores += (scores.empty() ? "" : "; ") + range + ":";
    for (const auto& [name, variant] : kCandidates) {
      Network trial = chosen;
      CalibrationOptions o = opts;
      o.timesteps = last;
      if (opts.progress)  // (a lambda cannot capture structured bindings in C++17: copies)
        o.progress = [&opts, label = range + " " + name](const std::string& stage, int64_t d, int64_t t) {
          opts.progress(label + ", " + stage, d, t);
        };
      calibrate_ftbc_steps(trial, backend, data, o, variant, first - 1);
      SweepOptions so;
      so.sim.timesteps = last;
      so.sim.max_chunk_steps = opts.max_chunk_steps;
      so.batch_size = opts.batch_size;
      so.with_ann = false;
      so.comm = opts.comm;
      const SweepResult r = run_sweep(backend, trial, held_out, so);
      double score = 0.0;
      for (int64_t t = first; t <= last; ++t) score += r.accuracy[size_t(t - 1)];
      score /= double(last - first + 1);
      char text[48];
      std::snprintf(text, sizeof text, " %s %.2f", name, score);
      scores += text;
      if (score > best) best = score, best_net = std::move(trial), best_name = name;
    }
    chosen = std::move(best_net);
    choices += (choices.empty() ? "" : ", ") + range + " " + best_name;
  }
  for (int i : net.neuron_nodes()) net.neuron(i).set_bias(chosen.neuron(i).bias());

  CalibrationReport r;
  r.method = name();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.images = fit + held;
  r.parameters = calibration_parameters(opts, data);
  r.parameters["held_out_images"] = std::to_string(held);
  r.parameters["images_used"] = std::to_string(fit) + " fit (the first of the seeded shuffle), " + std::to_string(held) +
                                " held out (its last) from " + data.source;
  r.parameters["choices"] = choices;
  r.parameters["held_out_accuracy"] = scores;
  return r;
}

}  // namespace snn::conversion
