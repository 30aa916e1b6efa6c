#include "snn/conversion/light_calibration.hpp"

#include <chrono>

#include "snn/conversion/shared_batch.hpp"
#include "snn/error.hpp"

namespace snn::conversion {

namespace {
// Sums one layer's mean spike output per channel over every step of a simulation, and keeps the
// layer's mean ANN activation per channel on the same images.
class RateProbe : public NeuronProbe {
 public:
  RateProbe(int node, int64_t channels, const SharedBatch& batch)
      : node_(node), sum_(size_t(channels), 0.0), batch_(batch) {}
  bool wants_ann_reference() const override { return true; }
  bool observes(int node) const override { return node == node_; }
  void combine_counts(std::vector<int64_t>& counts) override { batch_.combine(counts); }
  void after_layer(NeuronLayerAccess& layer) override {
    const int64_t C = int64_t(sum_.size());
    const std::vector<double>& s = layer.output_channel_sums();
    std::vector<double> chunk(size_t(C), 0.0);  // spikes of the chunk's steps (whole multiples of θ: exact)
    for (int64_t t = 0; t < layer.chunk().steps; ++t)
      for (int64_t c = 0; c < C; ++c) chunk[size_t(c)] += s[size_t(t * C + c)];
    const std::vector<double> m = batch_.spike_means(chunk, layer.positions());
    for (int64_t c = 0; c < C; ++c) sum_[size_t(c)] += m[size_t(c)];
    ann_ = batch_.ann_means(layer);
  }
  const std::vector<double>& sum() const { return sum_; }  // Σ_t mean spike output
  const std::vector<double>& ann() const { return ann_; }

 private:
  int node_;
  std::vector<double> sum_, ann_;
  const SharedBatch& batch_;
};
}  // namespace

CalibrationReport LightCalibrator::calibrate(Network& net, Backend& backend, const Dataset& data,
                                             const CalibrationOptions& opts) const {
  check_calibration_options(opts, &data);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> neurons = net.neuron_nodes();
  require(!neurons.empty(), "light calibration: the network has no neuron layers");
  auto program = backend.prepare(net);
  for (int i : neurons) program->set_neuron_bias(i, Tensor());
  const auto batches = calibration_batches(opts, data.size());
  const SharedBatch shared(opts.comm ? *opts.comm : single_process(), opts.batch_size);
  std::vector<Tensor> images;
  for (const auto& batch : batches) images.push_back(gather_images(data, share_of_batch(batch, shared.share())));
  SimulationOptions sim;
  sim.timesteps = opts.timesteps;
  sim.max_chunk_steps = opts.max_chunk_steps;
  sim = shared.simulation(net, sim);
  const int64_t total = opts.iters * int64_t(neurons.size());
  int64_t done = 0;
  for (int64_t it = 0; it < opts.iters; ++it)
    for (int node : neurons) {
      const NeuronLayer& layer = net.neuron(node);
      const int64_t C = layer.channels();
      std::vector<double> err(size_t(C), 0.0);
      for (size_t b = 0; b < batches.size(); ++b) {
        RateProbe probe(node, C, shared);
        backend.simulate(*program, images[b], sim, &probe);
        for (int64_t c = 0; c < C; ++c)
          err[size_t(c)] += probe.sum()[size_t(c)] / double(opts.timesteps) - probe.ann()[size_t(c)];
      }
      Tensor bias = program->neuron_bias(node);
      if (bias.empty()) bias = Tensor({1, C}, 0.0f);
      for (int64_t c = 0; c < C; ++c) bias[c] += float(err[size_t(c)] / double(batches.size()));
      program->set_neuron_bias(node, bias, /*constant_over_time=*/true);
      if (opts.progress) opts.progress("pass " + std::to_string(it + 1) + ": " + layer.name(), ++done, total);
    }
  store_biases(*program, net);
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
