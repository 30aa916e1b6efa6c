#include "snn/cpu_backend.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <omp.h>
#include <random>

#include "snn/error.hpp"

namespace snn {

namespace {

// Sets OpenMP's and Eigen's thread count for the duration of a call, then restores them.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(n);
    Eigen::setNbThreads(n);
  }
  ~ScopedThreads() {
    omp_set_num_threads(saved_);
    Eigen::setNbThreads(saved_);
  }

 private:
  int saved_;
};

// Memory-bound passes over whole activations: parallel, or they cap the speed-up of the GEMMs.
int64_t count_nonzero(const float* p, int64_t n) {
  int64_t c = 0;
#pragma omp parallel for reduction(+ : c) schedule(static)
  for (int64_t i = 0; i < n; ++i) c += p[i] != 0.0f;
  return c;
}

// [B, ...] -> [steps * B, ...], the same batch at every step (a static input read by a dynamic layer).
Tensor repeat_steps(const Tensor& x, int64_t steps) {
  Shape s = x.shape();
  s[0] *= steps;
  Tensor out(s);
  const int64_t n = x.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < steps * n; ++i) out[i] = x[i % n];
  return out;
}

// Poisson rate code: pixel fires with probability clamp(raw, 0, 1); then the network's normalisation,
// so that the expected encoded input equals the preprocessed analog image.
Tensor poisson_encode(const Network& net, const Tensor& images, int64_t steps, std::mt19937_64& rng) {
  Shape s = images.shape();
  s[0] *= steps;
  Tensor spikes(s);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t i = 0; i < images.numel(); ++i) {
      const float p = std::min(1.0f, std::max(0.0f, images[i]));
      spikes[t * images.numel() + i] = u(rng) < p ? 1.0f : 0.0f;
    }
  return preprocess(net, spikes.reshaped(s));
}

}  // namespace

std::string to_string(Encoding e) { return e == Encoding::Direct ? "direct" : "poisson"; }

Encoding parse_encoding(const std::string& s) {
  if (s == "direct") return Encoding::Direct;
  if (s == "poisson") return Encoding::Poisson;
  throw Error("unknown input encoding '" + s + "' (expected direct or poisson)");
}

CpuBackend::CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_num_procs()) {}

Tensor CpuBackend::forward_ann(const Network& net, const Tensor& images, std::vector<Tensor>* node_outputs) {
  ScopedThreads guard(threads_);
  net.validate();
  const Tensor x = preprocess(net, images);
  std::vector<Tensor> outs(size_t(net.size()));
  const std::vector<int> last = net.last_use();
  for (int i = 0; i < net.size(); ++i) {
    std::vector<const Tensor*> ins;
    for (int j : net.inputs(i)) ins.push_back(j == Network::kInput ? &x : &outs[size_t(j)]);
    net.layer(i).forward(ins, outs[size_t(i)]);
    if (!node_outputs)
      for (int j : net.inputs(i))
        if (j >= 0 && last[size_t(j)] == i) outs[size_t(j)] = Tensor();
  }
  Tensor result = outs.back();
  if (node_outputs) *node_outputs = std::move(outs);
  return result;
}

BatchSimulation CpuBackend::simulate(const Network& net, const Tensor& images, const SimulationOptions& opts,
                                     SimulationHook* hook) {
  ScopedThreads guard(threads_);
  net.validate();
  require(opts.timesteps > 0, "timesteps must be at least 1, got " + std::to_string(opts.timesteps));
  require(images.rank() >= 1 && images.dim(0) > 0, "simulate: empty batch");
  const int64_t T = opts.timesteps, B = images.dim(0);
  const int N = net.size();
  const bool direct = opts.encoding == Encoding::Direct;
  const Tensor x_static = direct ? preprocess(net, images) : Tensor();
  if (!direct) preprocess(net, images);  // shape check only

  // Static nodes: stateless, fed only by static nodes (the direct-encoded input). Computed once.
  std::vector<char> is_static(static_cast<size_t>(N)), events(static_cast<size_t>(N));
  std::vector<int64_t> macs(static_cast<size_t>(N));
  int64_t dynamic_floats_per_step = direct ? 0 : numel_of(net.input_shape());
  for (int i = 0; i < N; ++i) {
    const Layer& l = net.layer(i);
    bool all_static = true, all_events = true;
    for (int j : net.inputs(i)) {
      all_static &= j == Network::kInput ? direct : bool(is_static[size_t(j)]);
      all_events &= j != Network::kInput && events[size_t(j)];
    }
    is_static[size_t(i)] = !l.stateful() && all_static;
    events[size_t(i)] = l.emits_spikes() || (l.preserves_events() && all_events);
    macs[size_t(i)] = l.macs(net.input_shapes(i));
    if (!is_static[size_t(i)]) dynamic_floats_per_step += numel_of(net.output_shape(i));
  }
  const int64_t per_step_bytes = std::max<int64_t>(1, dynamic_floats_per_step * B * int64_t(sizeof(float)));
  int64_t chunk_steps = opts.max_chunk_steps > 0 ? opts.max_chunk_steps : opts.memory_budget / per_step_bytes;
  chunk_steps = std::max<int64_t>(1, std::min(chunk_steps, T));

  BatchSimulation r;
  r.timesteps = T;
  r.batch = B;
  r.predictions.assign(size_t(T * B), 0);
  const std::vector<int> neurons = net.neuron_nodes();
  std::vector<int> neuron_slot(static_cast<size_t>(N), -1), weight_slot(static_cast<size_t>(N), -1);
  for (size_t k = 0; k < neurons.size(); ++k) neuron_slot[size_t(neurons[k])] = int(k);
  r.spikes.assign(neurons.size(), std::vector<double>(size_t(T), 0.0));
  for (int i = 0; i < N; ++i)
    if (macs[size_t(i)] > 0) {
      weight_slot[size_t(i)] = int(r.weight_nodes.size());
      r.weight_nodes.push_back(i);
    }
  r.synaptic_ops.assign(r.weight_nodes.size(), std::vector<double>(size_t(T), 0.0));
  r.dense_macs = r.synaptic_ops;

  std::vector<std::unique_ptr<LayerState>> states(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i)
    if (net.layer(i).stateful()) states[size_t(i)] = net.layer(i).make_state(net.input_shapes(i), B);

  const int out_node = net.output_node();
  const int64_t K = net.output_shape(out_node)[0];
  r.readout = Tensor({B, K}, 0.0f);
  std::vector<Tensor> static_out(static_cast<size_t>(N));
  std::mt19937_64 rng(opts.seed);

  // Output buffers live across chunks: same shapes every chunk, so no reallocation or zero-filling
  // (serial page-fault work that otherwise rivals the GEMMs). Their total is what the chunk size allows.
  std::vector<Tensor> outs(static_cast<size_t>(N));
  // Static outputs repeated over a chunk's steps, for dynamic readers; slot N is the network input.
  std::vector<Tensor> repeated(static_cast<size_t>(N) + 1);
  std::vector<int64_t> repeated_steps(static_cast<size_t>(N) + 1, 0);
  for (int64_t t0 = 0; t0 < T; t0 += chunk_steps) {
    const StepChunk chunk{t0, std::min(chunk_steps, T - t0), B};
    const int64_t steps = chunk.steps;
    const Tensor x_chunk = direct ? Tensor() : poisson_encode(net, images, steps, rng);
    for (int i = 0; i < N; ++i) {
      const Layer& layer = net.layer(i);
      const size_t si = size_t(i);
      if (is_static[si] && t0 > 0) continue;  // computed in the first chunk, valid for every step
      std::vector<const Tensor*> ins;
      for (int j : net.inputs(i)) {
        const bool j_static = j == Network::kInput ? direct : bool(is_static[size_t(j)]);
        const Tensor& src = j == Network::kInput ? (direct ? x_static : x_chunk)
                                                 : (j_static ? static_out[size_t(j)] : outs[size_t(j)]);
        if (j_static && !is_static[si]) {
          const size_t slot = j == Network::kInput ? size_t(N) : size_t(j);
          if (repeated_steps[slot] != steps) {
            repeated[slot] = repeat_steps(src, steps);
            repeated_steps[slot] = steps;
          }
          ins.push_back(&repeated[slot]);
        } else {
          ins.push_back(&src);
        }
      }

      if (is_static[si]) {
        layer.forward(ins, static_out[si]);
        if (weight_slot[si] >= 0) r.dense_macs[size_t(weight_slot[si])][0] += double(macs[si]) * double(B);
      } else {
        if (hook && neuron_slot[si] >= 0) hook->before_neuron_layer(i, *ins[0], chunk);
        if (layer.stateful()) layer.forward_snn(ins, outs[si], states[si].get(), chunk);
        else layer.forward(ins, outs[si]);
        if (hook && neuron_slot[si] >= 0) hook->after_neuron_layer(i, outs[si], chunk);

        if (weight_slot[si] >= 0) {
          // Synaptic operations: a weight layer does work per nonzero input (events) or per input (analog).
          const int j = net.inputs(i)[0];
          const bool ev = j != Network::kInput && events[size_t(j)];
          const int64_t per_step = ins[0]->numel() / steps;
          for (int64_t t = 0; t < steps; ++t) {
            if (ev) {
              const double density = double(count_nonzero(ins[0]->data() + t * per_step, per_step)) / double(per_step);
              r.synaptic_ops[size_t(weight_slot[si])][size_t(t0 + t)] += density * double(macs[si]) * double(B);
            } else {
              r.dense_macs[size_t(weight_slot[si])][size_t(t0 + t)] += double(macs[si]) * double(B);
            }
          }
        }
        if (neuron_slot[si] >= 0) {
          const int64_t per_step = outs[si].numel() / steps;
          for (int64_t t = 0; t < steps; ++t)
            r.spikes[size_t(neuron_slot[si])][size_t(t0 + t)] +=
                double(count_nonzero(outs[si].data() + t * per_step, per_step));
        }
      }
    }

    // Anytime readout: running sum of the readout over steps; prediction = its argmax after each step.
    const bool out_static = is_static[size_t(out_node)];
    const Tensor& y = out_static ? static_out[size_t(out_node)] : outs[size_t(out_node)];
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t b = 0; b < B; ++b) {
        const float* row = y.data() + ((out_static ? 0 : t * B) + b) * K;
        float* acc = r.readout.data() + b * K;
        int32_t best = 0;
        for (int64_t k = 0; k < K; ++k) {
          acc[k] += row[k];
          if (acc[k] > acc[best]) best = int32_t(k);
        }
        r.predictions[size_t((t0 + t) * B + b)] = best;
      }
  }
  return r;
}

}  // namespace snn
