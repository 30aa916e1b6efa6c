#include "snn/conversion/levels_calibration.hpp"

#include <chrono>

#include "snn/error.hpp"

namespace snn::conversion {

int64_t spread_levels_over_steps(Network& net, int64_t timesteps) {
  int64_t set = 0, qcfs = 0;
  for (int node : net.neuron_nodes()) {
    NeuronLayer& layer = net.neuron(node);
    if (layer.activation() != SourceActivation::QCFS) continue;
    ++qcfs;
    NeuronConfig cfg = layer.config();
    require(cfg.spikes == Spikes::Signed,
            "levels: layer '" + layer.name() +
                "' has binary spikes; spreading the CNN's levels over T steps needs signed neurons, which take "
                "back the spikes an uneven input sent too early (convert with --spikes signed)");
    layer.clear_bias();
    cfg.threshold_scale = 1.0f;
    cfg.max_spikes = NeuronConfig::kNoSpikeCap;
    if (layer.levels() <= timesteps) {
      cfg.threshold_scale = float(double(timesteps) / double(layer.levels()));
      cfg.max_spikes = float(layer.levels());
      ++set;
    }
    layer.set_config(cfg);
  }
  require(qcfs > 0, "levels: the network has no QCFS layers (it needs the CNN's quantisation levels L; for ReLU or "
                    "clip networks use ftbc-auto)");
  return set;
}

bool levels_apply(const Network& net, int64_t timesteps) {
  int64_t qcfs = 0;
  for (int node : net.neuron_nodes()) {
    const NeuronLayer& layer = net.neuron(node);
    if (layer.activation() != SourceActivation::QCFS) continue;
    if (layer.config().spikes != Spikes::Signed || layer.levels() > timesteps) return false;
    ++qcfs;
  }
  return qcfs > 0;
}

void require_levels_fit(const Network& net, int64_t timesteps) {
  const NeuronLayer* most = nullptr;  // the QCFS layer with the most levels
  for (int node : net.neuron_nodes()) {
    const NeuronLayer& layer = net.neuron(node);
    if (layer.activation() == SourceActivation::QCFS && (!most || layer.levels() > most->levels())) most = &layer;
  }
  if (!most || most->levels() <= timesteps) return;
  throw Error("method levels at --T " + std::to_string(timesteps) + ": layer '" + most->name() + "' has L = " +
              std::to_string(most->levels()) + " QCFS levels, more than T; levels spreads each layer's L levels "
              "over T steps and would leave it unchanged (run it with --T " + std::to_string(most->levels()) +
              " or more, or use ftbc-auto or ftbc-exact at this T)");
}

void LevelsCalibrator::check_applicable(const Network& net, const CalibrationOptions& opts) const {
  require_levels_fit(net, opts.timesteps);
}

CalibrationReport LevelsCalibrator::calibrate(Network& net, Backend&, const Dataset&,
                                              const CalibrationOptions& opts) const {
  check_calibration_options(opts, nullptr);
  // A layer with L > T would keep its threshold: a model labelled "levels" that is not.
  require_levels_fit(net, opts.timesteps);
  const auto start = std::chrono::steady_clock::now();
  const int64_t set = spread_levels_over_steps(net, opts.timesteps);
  CalibrationReport r;
  r.method = name();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.parameters = {{"T", std::to_string(opts.timesteps)},
                  {"layers_spread", std::to_string(set)},
                  {"read_at", "t = T (exact there, not before)"}};
  return r;
}

}  // namespace snn::conversion
