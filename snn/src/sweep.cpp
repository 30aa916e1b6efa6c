#include "snn/sweep.hpp"

#include <chrono>

#include "snn/data_parallel.hpp"
#include "snn/error.hpp"
#include "snn/limits.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/simulation_plan.hpp"
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
                    const ProgressFn& progress, Communicator* comm) {
  check_labels_fit(net, data);
  require(batch_size > 0, "batch size must be positive");
  Communicator& c = comm ? *comm : single_process();
  int64_t correct = 0;
  auto program = backend.prepare(net);
  const int64_t blocks = (data.size() + batch_size - 1) / batch_size;
  deal_blocks(
      c, {0, blocks, 1},
      [&](int64_t block, std::vector<double>& row) {
        const int64_t b0 = block * batch_size, n = std::min(batch_size, data.size() - b0);
        const Tensor logits = backend.forward_ann(*program, data.batch_images(b0, n));
        const int64_t k = logits.dim(1);
        for (int64_t i = 0; i < n; ++i) row[0] += argmax_row(logits.data() + i * k, k) == data.labels[size_t(b0 + i)];
      },
      [&](int64_t, const double* row) { correct += int64_t(row[0]); },
      [&](int64_t done) {
        if (progress && c.is_root()) progress(std::min(data.size(), done * batch_size), data.size());
      });
  return 100.0 * double(correct) / double(data.size());
}

namespace {
// One block's numbers as a row: correct predictions per step, then spikes [L][T], synaptic operations
// [W][T] and dense MACs [W][T] (whole-block totals).
struct SweepRow {
  int64_t T, L, W;
  size_t width() const { return size_t(T * (1 + L + 2 * W)); }
  double* correct(double* r) const { return r; }
  double* spikes(double* r, int64_t l) const { return r + T * (1 + l); }
  double* synaptic_ops(double* r, int64_t w) const { return r + T * (1 + L + w); }
  double* dense_macs(double* r, int64_t w) const { return r + T * (1 + L + W + w); }
};

// The sums over every image turned into the result's rates: accuracy in percent per step, firing rates
// per neuron, operation counts per image.
void add_rates(SweepResult& r, const SweepRow& layout, std::vector<double>& summed, double images) {
  const int64_t T = layout.T;
  double* sums = summed.data();
  for (int64_t t = 0; t < T; ++t) r.accuracy.push_back(100.0 * layout.correct(sums)[t] / images);
  for (int64_t l = 0; l < layout.L; ++l) {
    r.firing_rate.emplace_back(layout.spikes(sums, l), layout.spikes(sums, l) + T);
    for (auto& v : r.firing_rate.back()) v /= images * double(r.neurons[size_t(l)]);
  }
  for (int64_t w = 0; w < layout.W; ++w) {
    r.synaptic_ops.emplace_back(layout.synaptic_ops(sums, w), layout.synaptic_ops(sums, w) + T);
    r.dense_macs.emplace_back(layout.dense_macs(sums, w), layout.dense_macs(sums, w) + T);
  }
  for (auto* m : {&r.synaptic_ops, &r.dense_macs})
    for (auto& row : *m)
      for (auto& v : row) v /= images;
}
}  // namespace

SweepResult run_sweep(Backend& backend, const Network& net, const Dataset& data, const SweepOptions& opts) {
  check_labels_fit(net, data);
  check_range(opts.batch_size, limits::kBatchSize, "--batch-size");
  check_range(opts.sim.timesteps, limits::kTimesteps, "--T");
  Communicator& comm = opts.comm ? *opts.comm : single_process();
  const int64_t T = opts.sim.timesteps;
  SweepResult r;
  r.images = data.size();
  r.timesteps = T;
  r.ann_macs = net.macs_per_sample();
  for (int i : net.neuron_nodes()) {
    r.neuron_layers.push_back(net.layer(i).name());
    r.neurons.push_back(numel_of(net.output_shape(i)));
  }
  const SimulationPlan plan = make_simulation_plan(net, opts.sim, std::min(opts.batch_size, data.size()));
  for (int i : plan.weight_nodes) {
    r.weight_layers.push_back(net.layer(i).name());
    r.layer_macs.push_back(net.layer(i).macs(net.input_shapes(i)));
  }
  if (opts.with_ann) {
    const double t0 = now_seconds();
    r.ann_accuracy = evaluate_ann(backend, net, data, opts.batch_size, {}, &comm);
    r.ann_seconds = now_seconds() - t0;
  }

  const SweepRow layout{T, int64_t(r.neuron_layers.size()), int64_t(r.weight_layers.size())};
  const int64_t blocks = (data.size() + opts.batch_size - 1) / opts.batch_size;
  SweepPartial state;
  state.blocks = blocks;
  state.sums.assign(layout.width(), 0.0);
  if (opts.checkpoint) {
    const SweepLayout expected{blocks, layout.width(), T, data.size(), opts.batch_size};
    if (auto saved = opts.checkpoint->find(opts.checkpoint_key, expected)) state = *saved;
  }

  const double t_start = now_seconds(), seconds_before = state.seconds;
  auto program = backend.prepare(net);  // weights uploaded once for every batch
  deal_blocks(
      comm, {state.next_block, blocks, layout.width()},
      [&](int64_t block, std::vector<double>& row) {
        const int64_t b0 = block * opts.batch_size, n = std::min(opts.batch_size, data.size() - b0);
        SimulationOptions sim = opts.sim;
        sim.seed = opts.sim.seed + uint64_t(b0);  // batches get distinct Poisson streams, reproducibly
        const BatchSimulation s = backend.simulate(*program, data.batch_images(b0, n), sim);
        require(s.spikes.size() == size_t(layout.L) && s.synaptic_ops.size() == size_t(layout.W),
                "sweep: the backend reported other layers than the simulation plan");
        double* out = row.data();
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < n; ++i)
            layout.correct(out)[t] += s.predictions[size_t(t * n + i)] == data.labels[size_t(b0 + i)];
        for (int64_t l = 0; l < layout.L; ++l)
          std::copy(s.spikes[size_t(l)].begin(), s.spikes[size_t(l)].end(), layout.spikes(out, l));
        for (int64_t w = 0; w < layout.W; ++w) {
          std::copy(s.synaptic_ops[size_t(w)].begin(), s.synaptic_ops[size_t(w)].end(), layout.synaptic_ops(out, w));
          std::copy(s.dense_macs[size_t(w)].begin(), s.dense_macs[size_t(w)].end(), layout.dense_macs(out, w));
        }
      },
      [&](int64_t, const double* row) {
        for (size_t k = 0; k < state.sums.size(); ++k) state.sums[k] += row[k];
      },
      [&](int64_t done) {
        state.next_block = done;
        state.seconds = seconds_before + (now_seconds() - t_start);
        if (opts.checkpoint) opts.checkpoint->save(opts.checkpoint_key, state);
        if (opts.progress && comm.is_root()) opts.progress(std::min(data.size(), done * opts.batch_size), data.size());
      });
  r.seconds = seconds_before + (now_seconds() - t_start);
  add_rates(r, layout, state.sums, double(data.size()));
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
