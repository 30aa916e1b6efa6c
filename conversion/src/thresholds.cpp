#include "snn/conversion/thresholds.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <sstream>

#include "snn/error.hpp"

namespace snn::conversion {

std::string to_string(NormMethod m) {
  switch (m) {
    case NormMethod::Max: return "max";
    case NormMethod::Percentile: return "percentile";
    case NormMethod::MinError: return "error";
  }
  return "?";
}

NormMethod parse_norm_method(const std::string& s) {
  if (s == "max") return NormMethod::Max;
  if (s == "percentile") return NormMethod::Percentile;
  if (s == "error") return NormMethod::MinError;
  throw Error("unknown normalisation method '" + s + "' (expected max, percentile or error)");
}

double percentile_of(std::vector<float>& values, double p) {
  require(!values.empty(), "percentile of an empty set of values");
  require(p >= 0.0 && p <= 100.0, "percentile must be in [0, 100], got " + std::to_string(p));
  const size_t n = values.size();
  const double pos = p / 100.0 * double(n - 1);
  const size_t lo = std::min(n - 1, size_t(std::floor(pos)));
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(lo), values.end());
  const double a = values[lo];
  if (lo + 1 >= n) return a;
  // After nth_element every element past lo is >= values[lo]: the next order statistic is their minimum.
  const double b = *std::min_element(values.begin() + std::ptrdiff_t(lo) + 1, values.end());
  return a + (pos - double(lo)) * (b - a);
}

double min_error_threshold(const std::vector<float>& values, int64_t timesteps, double v_init) {
  require(!values.empty(), "threshold search over an empty set of values");
  require(timesteps >= 1, "threshold search: timesteps must be at least 1");
  constexpr size_t kMaxValues = size_t(1) << 18;
  const size_t stride = (values.size() + kMaxValues - 1) / kMaxValues;
  std::vector<double> xs;
  for (size_t i = 0; i < values.size(); i += stride) xs.push_back(values[i]);
  const double top = *std::max_element(xs.begin(), xs.end());
  const double T = double(timesteps);
  auto error = [&](double theta) {
    double e = 0.0;
    for (double x : xs) {
      const double n = std::clamp(std::floor(x * T / theta + v_init), 0.0, T);
      const double d = x - theta / T * n;
      e += d * d;
    }
    return e;
  };
  // The error is not unimodal in θ (steps of the quantiser cross clusters of values): a geometric grid
  // over (top/256, top], then a finer one between the best point's neighbours.
  constexpr int kGrid = 256;
  double best = top, best_error = error(top), lo = top, hi = top;
  const double ratio = std::pow(256.0, 1.0 / (kGrid - 1));
  for (int i = 0; i < kGrid; ++i) {
    const double theta = top / std::pow(ratio, double(i));
    const double e = error(theta);
    if (e < best_error) best = theta, best_error = e;
  }
  lo = best / ratio, hi = std::min(top, best * ratio);
  for (int i = 0; i <= 64; ++i) {
    const double theta = lo + (hi - lo) * i / 64.0;
    const double e = error(theta);
    if (e < best_error) best = theta, best_error = e;
  }
  return best;
}

namespace {

// Collects the positive activations of one layer (or channel) with bounded memory; see the header.
class Collector {
 public:
  Collector(int64_t cap, uint64_t seed) : cap_(std::max<int64_t>(cap, 64)), rng_(seed) {}

  void add(float v) {
    ++n_;
    max_ = std::max(max_, v);
    if (!overflow_) {
      all_.push_back(v);
      if (n_ > cap_) start_overflow();
      return;
    }
    if (v > floor_) {
      top_.push_back(v);
      if (top_.size() >= 2 * keep_) truncate_top();
    }
    // Reservoir sampling keeps sample_ a uniform sample of all n_ values.
    const uint64_t j = std::uniform_int_distribution<uint64_t>(0, uint64_t(n_ - 1))(rng_);
    if (j < sample_.size()) sample_[j] = v;
  }

  int64_t count() const { return n_; }
  float max() const { return max_; }
  // Every value, or (past the cap) a uniform sample of them.
  const std::vector<float>& sample() const { return overflow_ ? sample_ : all_; }

  // p-th percentile of everything added; *estimated is set when it comes from the sample.
  double percentile(double p, bool* estimated) {
    *estimated = false;
    if (!overflow_) return percentile_of(all_, p);
    const double pos = p / 100.0 * double(n_ - 1);
    const int64_t lo = std::min<int64_t>(n_ - 1, int64_t(std::floor(pos)));
    const int64_t hi = std::min<int64_t>(n_ - 1, lo + 1);
    const int64_t r_lo = n_ - 1 - lo;  // rank from the top, 0 = largest
    if (r_lo < int64_t(top_.size())) {
      // top_ holds every value above floor_ and at least the keep_ largest: its order statistics
      // are exact for ranks below its size.
      const double a = kth_largest(r_lo), b = kth_largest(n_ - 1 - hi);
      return a + (pos - double(lo)) * (b - a);
    }
    *estimated = true;
    return percentile_of(sample_, p);
  }

 private:
  void start_overflow() {
    keep_ = size_t(cap_ / 2);
    const size_t s = size_t(cap_ / 2);
    // A uniform subset of the values seen so far seeds the reservoir (partial Fisher-Yates).
    for (size_t i = 0; i < s; ++i) {
      const size_t j = std::uniform_int_distribution<size_t>(i, all_.size() - 1)(rng_);
      std::swap(all_[i], all_[j]);
    }
    sample_.assign(all_.begin(), all_.begin() + std::ptrdiff_t(s));
    top_ = std::move(all_);
    all_ = std::vector<float>();
    truncate_top();
    overflow_ = true;
  }
  void truncate_top() {
    std::nth_element(top_.begin(), top_.begin() + std::ptrdiff_t(keep_ - 1), top_.end(), std::greater<float>());
    top_.resize(keep_);
    floor_ = top_[keep_ - 1];
  }
  double kth_largest(int64_t r) {
    std::nth_element(top_.begin(), top_.begin() + r, top_.end(), std::greater<float>());
    return top_[size_t(r)];
  }

  int64_t cap_;
  int64_t n_ = 0;
  float max_ = 0.0f;
  bool overflow_ = false;
  std::vector<float> all_;
  std::vector<float> top_, sample_;
  size_t keep_ = 0;
  float floor_ = 0.0f;
  std::mt19937_64 rng_;
};

}  // namespace

bool needs_data_thresholds(const snn::Network& net) {
  for (int i : net.neuron_nodes())
    if (net.neuron(i).activation() == SourceActivation::ReLU) return true;
  return false;
}

namespace {
// The positive ANN-view activations of the neuron layers `nodes` on the first `images` images: one
// collector per layer, or per channel.
std::vector<std::vector<Collector>> collect_positive(const snn::Network& net, snn::Backend& backend,
                                                    const snn::Dataset& data, const NormOptions& opts,
                                                    const std::vector<int>& nodes, int64_t images) {
  std::vector<std::vector<Collector>> collectors;
  for (size_t l = 0; l < nodes.size(); ++l) {
    const int64_t channels = net.neuron(nodes[l]).channels();
    const int64_t groups = opts.channelwise ? channels : 1;
    const int64_t cap = std::max<int64_t>(1024, opts.max_values / groups);
    std::vector<Collector> cs;
    cs.reserve(size_t(groups));
    for (int64_t g = 0; g < groups; ++g) cs.emplace_back(cap, opts.seed + uint64_t(l) * 1000003u + uint64_t(g));
    collectors.push_back(std::move(cs));
  }

  std::vector<Tensor> outputs;
  auto program = backend.prepare(net);
  for (int64_t begin = 0; begin < images; begin += opts.batch_size) {
    const int64_t count = std::min(opts.batch_size, images - begin);
    backend.forward_ann(*program, data.batch_images(begin, count), &outputs);
    for (size_t l = 0; l < nodes.size(); ++l) {
      const Tensor& out = outputs.at(size_t(nodes[l]));
      const int64_t channels = net.neuron(nodes[l]).channels();
      const int64_t inner = out.numel() / (count * channels);
      for (int64_t b = 0; b < count; ++b)
        for (int64_t c = 0; c < channels; ++c) {
          Collector& col = collectors[l][opts.channelwise ? size_t(c) : 0];
          const float* p = out.data() + (b * channels + c) * inner;
          for (int64_t i = 0; i < inner; ++i) {
            const float v = p[i];
            if (!std::isfinite(v))
              throw Error("threshold calibration: layer '" + net.layer(nodes[l]).name() +
                          "' produced a non-finite activation in the ANN view (check the model and preprocessing)");
            if (v > 0.0f) col.add(v);
          }
        }
    }
    if (opts.progress) opts.progress(begin + count, images);
  }
  return collectors;
}

int64_t images_to_use(const snn::Network& net, const snn::Dataset& data, const NormOptions& opts) {
  int64_t images = data.size();
  if (opts.max_images > 0) images = std::min(images, opts.max_images);
  require(images > 0, "threshold calibration: the calibration dataset" +
                          (data.source.empty() ? std::string() : " " + data.source) + " has no images");
  require(data.sample_shape() == net.input_shape(),
          "threshold calibration: images of " + (data.source.empty() ? std::string("the dataset") : data.source) +
              " have shape " + snn::to_string(data.sample_shape()) + ", the network expects " +
              snn::to_string(net.input_shape()));
  return images;
}
}  // namespace

ThresholdReport set_thresholds(snn::Network& net, snn::Backend& backend, const snn::Dataset& data,
                               const NormOptions& opts) {
  ThresholdReport report;
  require(opts.method == NormMethod::Max || (opts.percentile > 0.0 && opts.percentile <= 100.0),
          "percentile must be in (0, 100], got " + std::to_string(opts.percentile));
  require(opts.batch_size > 0, "threshold calibration: batch size must be positive");
  require(opts.method != NormMethod::MinError || opts.timesteps >= 1,
          "threshold calibration: the error-minimising threshold needs the number of timesteps (>= 1)");

  std::vector<int> nodes;
  for (int i : net.neuron_nodes())
    if (net.neuron(i).activation() == SourceActivation::ReLU) nodes.push_back(i);
  if (nodes.empty()) {
    report.notes.push_back("no ReLU neuron layers: thresholds come from the model (clip/QCFS)");
    return report;
  }

  const int64_t images = images_to_use(net, data, opts);

  std::vector<std::vector<Collector>> collectors = collect_positive(net, backend, data, opts, nodes, images);
  report.images = images;

  for (size_t l = 0; l < nodes.size(); ++l) {
    NeuronLayer& layer = net.neuron(nodes[l]);
    LayerThreshold lt;
    lt.node = nodes[l];
    lt.layer = layer.name();
    std::vector<bool> dead;
    for (Collector& col : collectors[l]) {
      lt.values += col.count();
      if (col.count() == 0) {
        dead.push_back(true);
        lt.threshold.push_back(0.0f);
        continue;
      }
      dead.push_back(false);
      double theta = col.max();
      if (opts.method == NormMethod::Percentile) {
        bool est = false;
        theta = col.percentile(opts.percentile, &est);
        lt.estimated = lt.estimated || est;
      } else if (opts.method == NormMethod::MinError) {
        theta = min_error_threshold(col.sample(), opts.timesteps, layer.config().v_init);
      }
      lt.threshold.push_back(float(theta));
    }
    // Channels (or a whole layer) that never activate: θ cannot come from data.
    const int64_t n_dead = std::count(dead.begin(), dead.end(), true);
    if (n_dead == int64_t(dead.size())) {
      lt.threshold.assign(1, 1.0f);
      lt.degenerate = true;
      report.notes.push_back("layer '" + lt.layer + "': no positive activation on " + std::to_string(images) +
                             " calibration images; threshold set to 1");
    } else if (n_dead > 0) {
      // A silent channel gets the layer's largest channel threshold: conservative, it rarely fires.
      const float fill = *std::max_element(lt.threshold.begin(), lt.threshold.end());
      for (size_t c = 0; c < dead.size(); ++c)
        if (dead[c]) lt.threshold[c] = fill;
      report.notes.push_back("layer '" + lt.layer + "': " + std::to_string(n_dead) +
                             " channel(s) never active on the calibration images; they get the layer's largest threshold");
    }
    if (lt.estimated)
      report.notes.push_back("layer '" + lt.layer + "': percentile estimated from a uniform sample (" +
                             std::to_string(lt.values) + " positive activations exceed max_values)");
    layer.set_threshold(lt.threshold);
    report.layers.push_back(std::move(lt));
  }
  std::ostringstream os;
  os << "thresholds of " << nodes.size() << " ReLU layer(s) from " << images << " images: "
     << to_string(opts.method);
  if (opts.method == NormMethod::Percentile) os << " " << opts.percentile;
  if (opts.method == NormMethod::MinError) os << " for T = " << opts.timesteps;
  os << (opts.channelwise ? ", per channel" : ", per layer");
  report.notes.insert(report.notes.begin(), os.str());
  return report;
}

std::vector<std::string> set_spike_scales_for_steps(snn::Network& net, snn::Backend& backend, const snn::Dataset& data,
                                                    const NormOptions& opts) {
  require(opts.timesteps >= 1, "spike scales: the number of timesteps must be at least 1");
  std::vector<int> nodes;
  for (int i : net.neuron_nodes()) {
    const NeuronLayer& l = net.neuron(i);
    if (l.activation() == SourceActivation::QCFS && l.levels() > opts.timesteps && l.config().spikes == Spikes::Signed)
      nodes.push_back(i);
  }
  std::vector<std::string> set;
  if (nodes.empty()) return set;
  NormOptions per_layer = opts;
  per_layer.channelwise = false;  // the scale is one number per layer
  const auto collectors = collect_positive(net, backend, data, per_layer, nodes, images_to_use(net, data, opts));
  for (size_t l = 0; l < nodes.size(); ++l) {
    NeuronLayer& layer = net.neuron(nodes[l]);
    const Collector& col = collectors[l][0];
    if (col.count() == 0) continue;  // never active: nothing to fit
    const double theta_T = min_error_threshold(col.sample(), opts.timesteps, layer.config().v_init);
    NeuronConfig cfg = layer.config();
    cfg.threshold_scale = float(theta_T / double(layer.theta(0)));
    layer.set_config(cfg);
    set.push_back(layer.name());
  }
  return set;
}

}  // namespace snn::conversion
