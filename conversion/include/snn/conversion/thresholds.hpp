// Data-driven threshold selection ("weight/threshold normalisation") for converted networks.
//
// Each neuron layer standing in for a ReLU gets θ from the activations of the ANN view on calibration
// images: the maximum, or the p-th percentile (Rueckauer et al. 2017; default 99.99), per layer or per
// channel. Percentiles are taken over the *positive* activations, as in the SNN toolbox: zeros are
// neurons at rest and would pull the percentile of a sparse layer towards 0. Layers whose activation
// already has a threshold (clip(0,θ), QCFS) keep it.
//
// "error" (Li et al., ICML 2021, "A free lunch from ANN"): θ minimising the mean squared difference
// between the ReLU's output and what an IF neuron of threshold θ starting at v_init·θ emits over
// `timesteps` steps for the same constant input, θ/T·clamp(floor(x·T/θ + v_init), 0, T), over the
// positive activations (zeros cost nothing for any θ). Low T favours a lower θ: finer steps near where
// most activations are, at the price of clipping the tail.
//
// Why one ANN pass is enough: the ANN view of a ReLU neuron is relu(x) whatever its θ, so thresholds
// set for earlier layers do not change the activations of later ones.
//
// Memory: the positive activations of each layer are kept (exact percentile) up to max_values per layer;
// beyond that a layer keeps the largest values exactly (enough for high percentiles such as 99.99) and
// a uniform random sample of all values (percentiles below the kept top part become estimates; the
// report says which layers were estimated).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/backend.hpp"
#include "snn/dataset.hpp"
#include "snn/network.hpp"
#include "snn/sweep.hpp"

namespace snn::conversion {

enum class NormMethod { Max, Percentile, MinError };
std::string to_string(NormMethod m);
NormMethod parse_norm_method(const std::string& s);  // "max" | "percentile" | "error"

struct NormOptions {
  NormMethod method = NormMethod::Percentile;
  double percentile = 99.99;    // in (0, 100]; used by Percentile
  int64_t timesteps = 0;        // used by MinError: the T the SNN will run for (>= 1)
  bool channelwise = false;     // one θ per channel instead of one per layer
  int64_t batch_size = 128;
  int64_t max_images = 1000;    // calibration images used from the dataset; 0 = all
  int64_t max_values = int64_t(1) << 22;  // positive activations kept per layer (16 MB) before sampling
  uint64_t seed = 0;            // for the sample taken when a layer exceeds max_values
  snn::ProgressFn progress;     // (images done, images total)
};

struct LayerThreshold {
  int node = -1;
  std::string layer;
  std::vector<float> threshold;  // one value, or one per channel
  int64_t values = 0;            // positive activations seen (all channels)
  bool estimated = false;        // percentile estimated from a sample (see max_values)
  bool degenerate = false;       // no positive activation at all: θ = 1
};

struct ThresholdReport {
  int64_t images = 0;
  std::vector<LayerThreshold> layers;  // the ReLU layers that were set, in network order
  std::vector<std::string> notes;
};

// True when some neuron layer's threshold must come from data (its source activation is ReLU).
bool needs_data_thresholds(const snn::Network& net);

// Sets θ of every ReLU neuron layer from the ANN view on `data` (the first max_images images).
ThresholdReport set_thresholds(snn::Network& net, snn::Backend& backend, const snn::Dataset& data,
                               const NormOptions& opts);

// Signed QCFS layers run for fewer steps than their L levels: T steps cannot carry L levels, so the
// SNN threshold (and spike) that quantises the CNN's QCFS outputs with least error in T steps is fitted,
// as "error" does for ReLU layers, and set as the layer's threshold_scale (θ_T / θ; the ANN view keeps
// θ; one per layer). Returns the layers set. opts.timesteps is that T.
std::vector<std::string> set_spike_scales_for_steps(snn::Network& net, snn::Backend& backend,
                                                    const snn::Dataset& data, const NormOptions& opts);

// The θ in (0, max(values)] minimising sum (x - q(x))² with q the T-step IF quantiser above (v_init a
// fraction of θ). values: positive activations (at most ~2^18 are used, evenly spaced). Deterministic.
double min_error_threshold(const std::vector<float>& values, int64_t timesteps, double v_init);

// p-th percentile of values with linear interpolation between order statistics (numpy's default).
// values is reordered. Throws on an empty input or p outside [0, 100].
double percentile_of(std::vector<float>& values, double p);

}  // namespace snn::conversion
