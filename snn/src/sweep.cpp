#include "snn/sweep.hpp"

#include <chrono>

#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/model_file.hpp"

namespace snn {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check_labels_fit(const Network& net, const Dataset& data) {
  require(data.size() > 0, "dataset '" + data.source + "' is empty");
  const int64_t k = net.output_shape(net.output_node())[0];
  require(data.num_classes <= k, "dataset '" + data.source + "' has labels up to " +
                                     std::to_string(data.num_classes - 1) + " but the network has " +
                                     std::to_string(k) + " outputs");
}

int32_t argmax_row(const float* row, int64_t k) {
  int32_t best = 0;
  for (int64_t j = 1; j < k; ++j)
    if (row[j] > row[best]) best = int32_t(j);
  return best;
}
}  // namespace

double SweepResult::mean_firing_rate(size_t layer) const {
  const auto& r = firing_rate.at(layer);
  double s = 0;
  for (double v : r) s += v;
  return r.empty() ? 0.0 : s / double(r.size());
}

double SweepResult::snn_energy_uj(int64_t t, const EnergyModel& e) const {
  double pj = 0;
  for (size_t l = 0; l < synaptic_ops.size(); ++l)
    for (int64_t s = 0; s < t && s < timesteps; ++s)
      pj += synaptic_ops[l][size_t(s)] * e.pj_per_ac + dense_macs[l][size_t(s)] * e.pj_per_mac;
  return pj * 1e-6;
}

double SweepResult::ann_energy_uj(const EnergyModel& e) const { return double(ann_macs) * e.pj_per_mac * 1e-6; }

double evaluate_ann(Backend& backend, const Network& net, const Dataset& data, int64_t batch_size,
                    const ProgressFn& progress) {
  check_labels_fit(net, data);
  require(batch_size > 0, "batch size must be positive");
  int64_t correct = 0;
  auto program = backend.prepare(net);
  for (int64_t b0 = 0; b0 < data.size(); b0 += batch_size) {
    const int64_t n = std::min(batch_size, data.size() - b0);
    const Tensor logits = backend.forward_ann(*program, data.batch_images(b0, n));
    const int64_t k = logits.dim(1);
    for (int64_t i = 0; i < n; ++i) correct += argmax_row(logits.data() + i * k, k) == data.labels[size_t(b0 + i)];
    if (progress) progress(b0 + n, data.size());
  }
  return 100.0 * double(correct) / double(data.size());
}

SweepResult run_sweep(Backend& backend, const Network& net, const Dataset& data, const SweepOptions& opts) {
  check_labels_fit(net, data);
  require(opts.batch_size > 0, "--batch-size must be positive, got " + std::to_string(opts.batch_size));
  require(opts.sim.timesteps > 0, "--T must be at least 1, got " + std::to_string(opts.sim.timesteps));
  const int64_t T = opts.sim.timesteps;
  SweepResult r;
  r.images = data.size();
  r.timesteps = T;
  r.ann_macs = net.macs_per_sample();
  for (int i : net.neuron_nodes()) {
    r.neuron_layers.push_back(net.layer(i).name());
    r.neurons.push_back(numel_of(net.output_shape(i)));
  }
  if (opts.with_ann) {
    const double t0 = now_seconds();
    r.ann_accuracy = evaluate_ann(backend, net, data, opts.batch_size);
    r.ann_seconds = now_seconds() - t0;
  }

  std::vector<int64_t> correct(size_t(T), 0);
  std::vector<std::vector<double>> spikes(r.neuron_layers.size(), std::vector<double>(size_t(T), 0.0));
  const double t_start = now_seconds();
  auto program = backend.prepare(net);  // weights uploaded once for every batch
  for (int64_t b0 = 0; b0 < data.size(); b0 += opts.batch_size) {
    const int64_t n = std::min(opts.batch_size, data.size() - b0);
    SimulationOptions sim = opts.sim;
    sim.seed = opts.sim.seed + uint64_t(b0);  // batches get distinct Poisson streams, reproducibly
    BatchSimulation s = backend.simulate(*program, data.batch_images(b0, n), sim);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < n; ++i)
        correct[size_t(t)] += s.predictions[size_t(t * n + i)] == data.labels[size_t(b0 + i)];
    for (size_t l = 0; l < spikes.size(); ++l)
      for (int64_t t = 0; t < T; ++t) spikes[l][size_t(t)] += s.spikes[l][size_t(t)];
    if (r.weight_layers.empty()) {
      for (int i : s.weight_nodes) {
        r.weight_layers.push_back(net.layer(i).name());
        r.layer_macs.push_back(net.layer(i).macs(net.input_shapes(i)));
      }
      r.synaptic_ops.assign(s.weight_nodes.size(), std::vector<double>(size_t(T), 0.0));
      r.dense_macs = r.synaptic_ops;
    }
    for (size_t l = 0; l < s.weight_nodes.size(); ++l)
      for (int64_t t = 0; t < T; ++t) {
        r.synaptic_ops[l][size_t(t)] += s.synaptic_ops[l][size_t(t)];
        r.dense_macs[l][size_t(t)] += s.dense_macs[l][size_t(t)];
      }
    if (opts.progress) opts.progress(b0 + n, data.size());
  }
  r.seconds = now_seconds() - t_start;

  const double images = double(data.size());
  for (int64_t t = 0; t < T; ++t) r.accuracy.push_back(100.0 * double(correct[size_t(t)]) / images);
  r.firing_rate = spikes;
  for (size_t l = 0; l < spikes.size(); ++l)
    for (auto& v : r.firing_rate[l]) v /= images * double(r.neurons[l]);
  for (auto* m : {&r.synaptic_ops, &r.dense_macs})
    for (auto& row : *m)
      for (auto& v : row) v /= images;
  return r;
}

namespace {
void write_strings(H5::Group& g, const std::string& name, const std::vector<std::string>& v) {
  size_t len = 1;
  for (const auto& s : v) len = std::max(len, s.size());
  std::vector<char> buf(v.size() * len, '\0');
  for (size_t i = 0; i < v.size(); ++i) std::copy(v[i].begin(), v[i].end(), buf.begin() + long(i * len));
  hsize_t n = v.size();
  H5::StrType type(H5::PredType::C_S1, len);
  H5::DataSet ds = g.createDataSet(name, type, n ? H5::DataSpace(1, &n) : H5::DataSpace(H5S_NULL));
  if (n) ds.write(buf.data(), type);
}
}  // namespace

void write_sweep_file(const std::string& path, const std::vector<SweepResult>& results,
                      const std::map<std::string, std::string>& info, const EnergyModel& energy) {
  require(!results.empty(), "write_sweep_file: no results");
  h5::write_atomically(path, [&](H5::H5File& file) {
    h5::write_attr(file, "format", std::string("snnc-sweep"));
    h5::write_attr(file, "format_version", int64_t(1));
    h5::write_attr(file, "snnc_version", std::string(snnc_version()));
    h5::write_attr(file, "timesteps", results[0].timesteps);
    h5::write_attr(file, "images", results[0].images);
    h5::write_attr(file, "ann_accuracy", results[0].ann_accuracy);
    h5::write_attr(file, "pj_per_mac", energy.pj_per_mac);
    h5::write_attr(file, "pj_per_ac", energy.pj_per_ac);
    std::string order;
    for (const auto& r : results) order += (order.empty() ? "" : ",") + r.method;
    h5::write_attr(file, "methods", order);
    for (const auto& [k, v] : info) h5::write_attr(file, k, v);
    H5::Group methods = file.createGroup("methods");
    for (const auto& r : results) {
      H5::Group g = methods.createGroup(r.method);
      h5::write_vector(g, "accuracy", r.accuracy);
      h5::write_matrix(g, "firing_rate", r.firing_rate);
      h5::write_matrix(g, "synaptic_ops", r.synaptic_ops);
      h5::write_matrix(g, "dense_macs", r.dense_macs);
      std::vector<double> e;
      for (int64_t t = 1; t <= r.timesteps; ++t) e.push_back(r.snn_energy_uj(t, energy));
      h5::write_vector(g, "energy_uj", e);
      write_strings(g, "neuron_layers", r.neuron_layers);
      write_strings(g, "weight_layers", r.weight_layers);
      h5::write_vector(g, "neurons", std::vector<double>(r.neurons.begin(), r.neurons.end()));
      h5::write_vector(g, "layer_macs", std::vector<double>(r.layer_macs.begin(), r.layer_macs.end()));
      h5::write_attr(g, "seconds", r.seconds);
      h5::write_attr(g, "calibration_seconds", r.calibration_seconds);
      h5::write_attr(g, "ann_accuracy", r.ann_accuracy);
      h5::write_attr(g, "ann_macs", r.ann_macs);
      h5::write_attr(g, "ann_energy_uj", r.ann_energy_uj(energy));
    }
  });
}

}  // namespace snn
