#include "snn/conversion/auto_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "snn/conversion/ftbc.hpp"
#include "snn/conversion/levels_calibration.hpp"
#include "snn/conversion/thresholds.hpp"
#include "snn/error.hpp"
#include "snn/sweep.hpp"

namespace snn::conversion {

namespace {

constexpr int64_t kHeldOut = 1000;     // held-out images at most
constexpr int64_t kMinHeldOut = 100;   // fewer could not tell the candidates apart
const std::pair<const char*, FtbcVariant> kCandidates[] = {
    {"ftbc", FtbcVariant::Fixed}, {"ftbc-paper", FtbcVariant::Paper}, {"ftbc-exact", FtbcVariant::Exact}};

// Held-out accuracy of a calibrated network: the mean over the doubling ranges of each range's mean
// accuracy, so every octave of t counts alike (t = 1 as much as t in 17..32).
double held_out_score(Backend& backend, const Network& net, const Dataset& held_out, const CalibrationOptions& opts,
                      int64_t first, int64_t last, bool per_octave) {
  SweepOptions so;
  so.sim.timesteps = last;
  so.sim.max_chunk_steps = opts.max_chunk_steps;
  so.batch_size = opts.batch_size;
  so.with_ann = false;
  so.comm = opts.comm;
  const SweepResult r = run_sweep(backend, net, held_out, so);
  auto mean = [&](int64_t a, int64_t b) {
    double m = 0.0;
    for (int64_t t = a; t <= b; ++t) m += r.accuracy[size_t(t - 1)];
    return m / double(b - a + 1);
  };
  if (!per_octave) return mean(first, last);
  double score = 0.0;
  const auto ranges = doubling_ranges(last);
  for (const auto& [a, b] : ranges) score += mean(a, b);
  return score / double(ranges.size());
}

void clear_biases(Network& net) {
  for (int i : net.neuron_nodes()) net.neuron(i).clear_bias();
}

bool has_signed_neurons(const Network& net) {
  for (int i : net.neuron_nodes())
    if (net.neuron(i).config().spikes == Spikes::Signed) return true;
  return false;
}

// Candidates for signed networks that fit nothing: rows [first, last] (1-based) of every layer's bias
// set to zero ("none"), or to the share that takes back the earlier rows' sum by step `last` ("cancel":
// a signed neuron's net count follows its summed input, so a summed bias of zero leaves it where the
// uncorrected network would be, which for signed neurons is the CNN's value as t grows).
Network with_rows(const Network& chosen, int64_t first, int64_t last, bool cancel) {
  Network trial = chosen;
  for (int i : trial.neuron_nodes()) {
    NeuronLayer& layer = trial.neuron(i);
    const int64_t C = layer.channels();
    Tensor bias({last, C}, 0.0f);
    const Tensor& kept = chosen.neuron(i).bias();
    for (int64_t t = 0; t < first - 1 && !kept.empty(); ++t)
      for (int64_t c = 0; c < C; ++c) bias[t * C + c] = kept[t * C + c];
    if (cancel)
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0.0;
        for (int64_t t = 0; t < first - 1; ++t) sum += double(bias[t * C + c]);
        for (int64_t t = first - 1; t < last; ++t) bias[t * C + c] = float(-sum / double(last - first + 1));
      }
    layer.set_bias(std::move(bias));
  }
  return trial;
}

std::string format_score(const std::string& name, double score) {
  char text[64];
  std::snprintf(text, sizeof text, " %s %.2f", name.c_str(), score);
  return text;
}

// The data-driven (ReLU) thresholds that fit T best: for each candidate, ftbc-exact calibrates all T
// steps and the held-out images score it. Candidates: the thresholds the network came with, and the
// least quantisation error for T on the fit images. Every process computes the same thresholds from
// all fit images (an ANN pass), so processes agree bit for bit.
std::string choose_thresholds(Network& net, Backend& backend, const Dataset& data, const Dataset& held_out,
                              const CalibrationOptions& opts, std::string* scores) {
  bool short_of_levels = false;  // signed QCFS layers with more levels than steps
  for (int i : net.neuron_nodes()) {
    const NeuronLayer& l = net.neuron(i);
    short_of_levels |= l.activation() == SourceActivation::QCFS && l.config().spikes == Spikes::Signed &&
                       l.levels() > opts.timesteps;
  }
  if (!needs_data_thresholds(net) && !short_of_levels)
    return "from the model (no ReLU layers, no signed QCFS layer with more levels than T)";
  const Dataset fit = dataset_subset(data, calibration_indices(opts, data.size()), "fit images");

  Network least_error = net;
  NormOptions no;
  no.method = NormMethod::MinError;
  no.timesteps = opts.timesteps;
  no.batch_size = opts.batch_size;
  no.max_images = 0;
  no.channelwise = false;
  if (needs_data_thresholds(net)) set_thresholds(least_error, backend, fit, no);
  if (short_of_levels) set_spike_scales_for_steps(least_error, backend, fit, no);

  const std::string converted = "as converted", fitted = "least error for T=" + std::to_string(opts.timesteps);
  double best = -1.0;
  std::string best_name;
  for (Network* candidate : {&net, &least_error}) {
    Network trial = *candidate;
    clear_biases(trial);  // (not the candidate's spike scales)
    CalibrationOptions o = opts;
    const std::string name = candidate == &net ? converted : fitted;
    if (opts.progress)
      o.progress = [&opts, label = "thresholds " + name](const std::string& stage, int64_t d, int64_t t) {
        opts.progress(label + ", " + stage, d, t);
      };
    calibrate_ftbc_steps(trial, backend, data, o, FtbcVariant::Exact, 0);
    const double score = held_out_score(backend, trial, held_out, opts, 1, opts.timesteps, true);
    *scores += format_score(name, score);
    if (score > best) best = score, best_name = name;
  }
  if (best_name == fitted)
    for (int i : net.neuron_nodes()) {
      net.neuron(i).set_threshold(least_error.neuron(i).threshold());
      net.neuron(i).set_config(least_error.neuron(i).config());  // the spike scales
    }
  return best_name;
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
                                   std::to_string(data.size()) + " (fewer --batches, more calibration data, or --method ftbc-exact)");
  const Dataset held_out = dataset_subset(data, held_out_indices(opts, data.size(), held), "held out");
  clear_calibration(net);  // whatever calibration the network came with (biases, spike scales and caps)

  // First the thresholds of ReLU layers and the spike scales of signed QCFS layers short of levels
  // (they shape every step), then the biases.
  std::string threshold_scores;
  const std::string thresholds = choose_thresholds(net, backend, data, held_out, opts, &threshold_scores);

  // Range by range: each candidate variant calibrates the range's steps (batches x passes on the fit
  // images, the earlier steps keeping the rows chosen for them, so that it corrects the state they
  // really leave), and the one that does best on the held-out images keeps its rows.
  Network chosen = net;
  clear_biases(chosen);
  const bool signed_spikes = has_signed_neurons(net);
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
      const double score = held_out_score(backend, trial, held_out, opts, first, last, false);
      scores += format_score(name, score);
      if (score > best) best = score, best_net = std::move(trial), best_name = name;
    }
    if (signed_spikes)
      for (const bool cancel : {false, true}) {
        if (cancel && first == 1) continue;  // nothing earlier to take back: the same as "none"
        Network trial = with_rows(chosen, first, last, cancel);
        const double score = held_out_score(backend, trial, held_out, opts, first, last, false);
        const char* name = cancel ? "cancel" : "none";
        scores += format_score(name, score);
        if (score > best) best = score, best_net = std::move(trial), best_name = name;
      }
    chosen = std::move(best_net);
    choices += (choices.empty() ? "" : ", ") + range + " " + best_name;
  }
  for (int i : net.neuron_nodes()) net.neuron(i).set_bias(chosen.neuron(i).bias());

  // Signed QCFS networks run for T >= L steps can be their CNN at t = T ("levels", no bias), at the cost
  // of the steps before T: the run is calibrated for T, so the held-out accuracy at t = T decides.
  std::string final_choice;
  if (levels_apply(net, opts.timesteps)) {
    Network spread = net;
    spread_levels_over_steps(spread, opts.timesteps);
    const double at_T_levels = held_out_score(backend, spread, held_out, opts, opts.timesteps, opts.timesteps, false);
    const double at_T_ranges = held_out_score(backend, net, held_out, opts, opts.timesteps, opts.timesteps, false);
    const bool levels = at_T_levels > at_T_ranges;
    final_choice = std::string(levels ? "levels" : "ranges") + " (held-out accuracy at t = T:" +
                   format_score("levels", at_T_levels) + "," + format_score("ranges", at_T_ranges) + ")";
    if (levels) {
      net = std::move(spread);
      choices = "levels (the CNN's L levels over T steps; no bias)";
    }
  }

  CalibrationReport r;
  r.method = name();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.images = fit + held;
  r.parameters = calibration_parameters(opts, data);
  r.parameters["held_out_images"] = std::to_string(held);
  r.parameters["images_used"] = std::to_string(fit) + " fit (the first of the seeded shuffle), " + std::to_string(held) +
                                " held out (its last) from " + data.source;
  r.parameters["thresholds"] = thresholds;
  if (!threshold_scores.empty()) r.parameters["thresholds_held_out_score"] = threshold_scores.substr(1);
  r.parameters["choices"] = choices;
  r.parameters["held_out_accuracy"] = scores;
  if (!final_choice.empty()) r.parameters["final_choice"] = final_choice;
  return r;
}

}  // namespace snn::conversion
