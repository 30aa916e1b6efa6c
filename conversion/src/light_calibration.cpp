#include "snn/conversion/light_calibration.hpp"

#include <chrono>

#include "snn/error.hpp"

namespace snn::conversion {

namespace {
// Sums one layer's spikes per channel over every step of a simulation.
class RateHook : public SimulationHook {
 public:
  RateHook(int node, int64_t channels) : node_(node), sum_(size_t(channels), 0.0) {}
  void after_neuron_layer(int node, const Tensor& out, const StepChunk& chunk) override {
    if (node != node_) return;
    const int64_t C = int64_t(sum_.size());
    const int64_t inner = out.numel() / (chunk.steps * chunk.batch * C);
    for (int64_t p = 0; p < chunk.steps * chunk.batch * C; ++p) {
      double s = 0;
      for (int64_t i = 0; i < inner; ++i) s += out[p * inner + i];
      sum_[size_t(p % C)] += s;
    }
  }
  const std::vector<double>& sum() const { return sum_; }

 private:
  int node_;
  std::vector<double> sum_;
};
}  // namespace

CalibrationReport LightCalibrator::calibrate(Network& net, Backend& backend, const Dataset& data,
                                             const CalibrationOptions& opts) const {
  check_calibration_options(opts, &data);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> neurons = net.neuron_nodes();
  require(!neurons.empty(), "light calibration: the network has no neuron layers");
  for (int i : neurons) net.neuron(i).clear_bias();
  const auto batches = calibration_batches(opts, data.size());
  std::vector<Tensor> images;
  std::vector<std::vector<Tensor>> ann(batches.size());
  for (size_t b = 0; b < batches.size(); ++b) {
    images.push_back(gather_images(data, batches[b]));
    backend.forward_ann(net, images.back(), &ann[b]);
  }
  const int64_t total = opts.iters * int64_t(neurons.size());
  int64_t done = 0;
  for (int64_t it = 0; it < opts.iters; ++it)
    for (int node : neurons) {
      NeuronLayer& layer = net.neuron(node);
      const int64_t C = layer.channels();
      std::vector<double> err(size_t(C), 0.0);
      for (size_t b = 0; b < batches.size(); ++b) {
        RateHook hook(node, C);
        SimulationOptions sim;
        sim.timesteps = opts.timesteps;
        sim.max_chunk_steps = opts.max_chunk_steps;
        backend.simulate(net, images[b], sim, &hook);
        const Tensor& a = ann[b][size_t(node)];
        const int64_t B = a.dim(0), inner = a.numel() / (B * C);
        std::vector<double> a_sum(size_t(C), 0.0);
        for (int64_t p = 0; p < B * C; ++p)
          for (int64_t i = 0; i < inner; ++i) a_sum[size_t(p % C)] += a[p * inner + i];
        for (int64_t c = 0; c < C; ++c)
          err[size_t(c)] += (hook.sum()[size_t(c)] / double(opts.timesteps) - a_sum[size_t(c)]) / double(B * inner);
      }
      Tensor bias = layer.bias_steps() ? layer.bias() : Tensor({1, C}, 0.0f);
      for (int64_t c = 0; c < C; ++c) bias[c] += float(err[size_t(c)] / double(batches.size()));
      layer.set_bias(std::move(bias), /*constant_over_time=*/true);
      if (opts.progress) opts.progress("pass " + std::to_string(it + 1) + ": " + layer.name(), ++done, total);
    }
  CalibrationReport r;
  r.method = name();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.images = opts.batches * opts.batch_size;
  r.parameters = {{"T", std::to_string(opts.timesteps)},       {"batches", std::to_string(opts.batches)},
                  {"batch_size", std::to_string(opts.batch_size)}, {"iters", std::to_string(opts.iters)},
                  {"seed", std::to_string(opts.seed)},          {"data", data.source}};
  return r;
}

}  // namespace snn::conversion
