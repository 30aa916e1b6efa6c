#include "snn/conversion/ftbc.hpp"

#include <chrono>
#include <map>

#include "snn/error.hpp"
#include "snn/neuron_dynamics.hpp"

namespace snn::conversion {

FtbcVariant parse_ftbc_variant(const std::string& s) {
  if (s == "fixed") return FtbcVariant::Fixed;
  if (s == "paper") return FtbcVariant::Paper;
  throw Error("unknown FTBC variant '" + s + "' (expected fixed or paper)");
}

namespace {

// Replays each neuron layer on its chunk input before the engine runs it, correcting b[t][c].
class FtbcHook : public SimulationHook {
 public:
  FtbcHook(Network& net, const std::vector<Tensor>& ann, double alpha, FtbcVariant variant,
           std::function<void(int)> on_layer)
      : net_(net), ann_(ann), alpha_(float(alpha)), variant_(variant), on_layer_(std::move(on_layer)) {}

  void before_neuron_layer(int node, const Tensor& x, const StepChunk& chunk) override {
    NeuronLayer& layer = net_.neuron(node);
    const Tensor& a = ann_[size_t(node)];  // ANN activation of this layer, [B, C, ...]
    const int64_t B = chunk.batch, C = layer.channels();
    const int64_t per_sample = a.numel() / B, inner = per_sample / C;
    const NeuronConfig& cfg = layer.config();

    auto it = membrane_.find(node);
    if (it == membrane_.end()) {
      Tensor v({B, per_sample});
      for (int64_t p = 0; p < B * C; ++p)
        for (int64_t i = 0; i < inner; ++i) v[p * inner + i] = cfg.v_init * layer.theta(p % C);
      it = membrane_.emplace(node, std::move(v)).first;
    }
    Tensor& v = it->second;

    // Per-channel mean ANN activation, the target of every step.
    std::vector<double> a_mean(size_t(C), 0.0);
    for (int64_t p = 0; p < B * C; ++p)
      for (int64_t i = 0; i < inner; ++i) a_mean[size_t(p % C)] += a[p * inner + i];
    for (auto& m : a_mean) m /= double(B * inner);

    Tensor bias = layer.bias();
    std::vector<float> scratch(size_t(per_sample * B));
    std::vector<double> plane_sum(size_t(B * C));
    Tensor v_saved;
    for (int64_t t = 0; t < chunk.steps; ++t) {
      const int64_t tt = chunk.t0 + t;
      if (variant_ == FtbcVariant::Fixed) v_saved = v;
      const bool paper = variant_ == FtbcVariant::Paper;
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < B * C; ++p) {
        const int64_t c = p % C;
        const float b = paper ? 0.0f : bias[tt * C + c];
        float* s = scratch.data() + p * inner;
        float* vp = v.data() + p * inner;
        neuron_step(x.data() + (t * B * C + p) * inner, vp, s, inner, layer.theta(c), b, cfg);
        double sum = 0;
        for (int64_t i = 0; i < inner; ++i) sum += s[i];
        plane_sum[size_t(p)] = sum;
        if (paper) {
          const float* ap = a.data() + p * inner;
          for (int64_t i = 0; i < inner; ++i) vp[i] -= alpha_ * (s[i] - ap[i]);
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        double s_sum = 0;
        for (int64_t b = 0; b < B; ++b) s_sum += plane_sum[size_t(b * C + c)];
        const double err = s_sum / double(B * inner) - a_mean[size_t(c)];
        bias[tt * C + c] += float(alpha_ * err);
      }
      if (variant_ == FtbcVariant::Fixed) {
        // Carry the state the corrected bias produces (what the engine will compute next).
        v = v_saved;
#pragma omp parallel for schedule(static)
        for (int64_t p = 0; p < B * C; ++p) {
          const int64_t c = p % C;
          neuron_step(x.data() + (t * B * C + p) * inner, v.data() + p * inner, scratch.data() + p * inner, inner,
                      layer.theta(c), bias[tt * C + c], cfg);
        }
      }
    }
    layer.set_bias(std::move(bias));
    if (on_layer_) on_layer_(node);
  }

 private:
  Network& net_;
  const std::vector<Tensor>& ann_;
  float alpha_;
  FtbcVariant variant_;
  std::function<void(int)> on_layer_;
  std::map<int, Tensor> membrane_;
};

}  // namespace

CalibrationReport FtbcCalibrator::calibrate(Network& net, Backend& backend, const Dataset& data,
                                            const CalibrationOptions& opts) const {
  check_calibration_options(opts, &data);
  const FtbcVariant variant = parse_ftbc_variant(forced_variant_.empty() ? opts.variant : forced_variant_);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> neurons = net.neuron_nodes();
  require(!neurons.empty(), "FTBC: the network has no neuron layers to calibrate");
  for (int i : neurons) net.neuron(i).set_bias(Tensor({opts.timesteps, net.neuron(i).channels()}, 0.0f));

  const auto batches = calibration_batches(opts, data.size());
  const int64_t total = opts.iters * opts.batches * int64_t(neurons.size());
  int64_t done = 0;
  for (int64_t it = 0; it < opts.iters; ++it)
    for (size_t b = 0; b < batches.size(); ++b) {
      const Tensor images = gather_images(data, batches[b]);
      std::vector<Tensor> ann;
      backend.forward_ann(net, images, &ann);
      const std::string stage = "pass " + std::to_string(it + 1) + "/" + std::to_string(opts.iters) + ", batch " +
                                std::to_string(b + 1) + "/" + std::to_string(batches.size());
      FtbcHook hook(net, ann, opts.alpha, variant, [&](int node) {
        // A layer counts as done once its last chunk has been corrected.
        if (opts.progress) opts.progress(stage + ": " + net.layer(node).name(), done, total);
      });
      SimulationOptions sim;
      sim.timesteps = opts.timesteps;
      sim.max_chunk_steps = opts.max_chunk_steps;
      backend.simulate(net, images, sim, &hook);
      done += int64_t(neurons.size());
      if (opts.progress) opts.progress(stage, done, total);
    }

  CalibrationReport r;
  // The variant is part of the method's identity ("ftbc-paper" whichever way it was asked for).
  r.method = variant == FtbcVariant::Paper ? "ftbc-paper" : "ftbc";
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.images = opts.batches * opts.batch_size;
  r.parameters = {{"T", std::to_string(opts.timesteps)},
                  {"alpha", std::to_string(opts.alpha)},
                  {"batches", std::to_string(opts.batches)},
                  {"batch_size", std::to_string(opts.batch_size)},
                  {"iters", std::to_string(opts.iters)},
                  {"seed", std::to_string(opts.seed)},
                  {"variant", variant == FtbcVariant::Fixed ? "fixed" : "paper"},
                  {"data", data.source}};
  return r;
}

}  // namespace snn::conversion
