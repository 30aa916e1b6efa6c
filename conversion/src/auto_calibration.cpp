#include "snn/conversion/auto_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "snn/error.hpp"
#include "snn/sweep.hpp"

namespace snn::conversion {

namespace {

constexpr int64_t kHeldOut = 1000;     // held-out images at most
constexpr int64_t kMinHeldOut = 100;   // fewer could not tell the candidates apart
const char* const kCandidates[] = {"ftbc", "ftbc-paper", "ftbc-exact"};

// Per neuron layer, the candidate's bias [T, C].
std::vector<Tensor> biases_of(const Network& net) {
  std::vector<Tensor> out;
  for (int i : net.neuron_nodes()) out.push_back(net.neuron(i).bias());
  return out;
}

// Rows [from, T) of every layer's bias taken from `rows`, the earlier ones from `chosen`.
void splice(std::vector<Tensor>& chosen, const std::vector<Tensor>& rows, int64_t from) {
  for (size_t l = 0; l < chosen.size(); ++l) {
    const int64_t C = chosen[l].dim(1), T = chosen[l].dim(0);
    std::copy(rows[l].data() + from * C, rows[l].data() + T * C, chosen[l].data() + from * C);
  }
}

void set_biases(Network& net, const std::vector<Tensor>& biases) {
  const std::vector<int> neurons = net.neuron_nodes();
  for (size_t l = 0; l < neurons.size(); ++l) net.neuron(neurons[l]).set_bias(biases[l]);
}

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

  // The candidates, each fitted on the calibration batches alone.
  std::vector<std::vector<Tensor>> candidates;
  for (const char* name : kCandidates) {
    Network c = net;
    clear_calibration(c);
    CalibrationOptions o = opts;
    o.variant = "fixed";  // "ftbc" is the fixed variant here, whatever --variant says
    if (opts.progress)
      o.progress = [&](const std::string& stage, int64_t d, int64_t t) { opts.progress(std::string(name) + ", " + stage, d, t); };
    make_calibrator(name)->calibrate(c, backend, data, o);
    candidates.push_back(biases_of(c));
  }

  // Range by range, the candidate that does best on the held-out images given the rows chosen so far.
  Network trial = net;
  clear_calibration(trial);
  std::vector<Tensor> chosen = candidates.front();
  std::string choices, scores;
  for (const auto& [first, last] : doubling_ranges(opts.timesteps)) {
    double best = -1.0;
    size_t best_k = 0;
    for (size_t k = 0; k < candidates.size(); ++k) {
      std::vector<Tensor> rows = chosen;
      splice(rows, candidates[k], first - 1);
      set_biases(trial, rows);
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
      char text[64];
      std::snprintf(text, sizeof text, "%s%s %.2f", k ? ", " : "", kCandidates[k], score);
      scores += (k ? "" : "t" + std::to_string(first) + "-" + std::to_string(last) + ": ") + text;
      if (score > best) best = score, best_k = k;
    }
    scores += "; ";
    splice(chosen, candidates[best_k], first - 1);
    choices += (choices.empty() ? "" : ", ") + std::string("t") + std::to_string(first) + "-" +
               std::to_string(last) + " " + kCandidates[best_k];
    if (opts.progress) opts.progress("chose " + choices, last, opts.timesteps);
  }
  for (int i : net.neuron_nodes()) net.neuron(i).clear_bias();
  set_biases(net, chosen);

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
