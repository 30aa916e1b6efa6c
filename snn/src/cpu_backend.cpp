#include "snn/cpu_backend.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <omp.h>

#include "snn/accountant.hpp"
#include "snn/cpu/activation_layout.hpp"
#include "snn/cpu/activation_slots.hpp"
#include "snn/cpu/kernel.hpp"
#include "snn/cpu/neuron_kernel.hpp"
#include "snn/cpu/plane_stage.hpp"
#include "snn/error.hpp"
#include "snn/limits.hpp"
#include "snn/philox.hpp"
#include "snn/simulation_plan.hpp"

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

// Non-zeros of each of `steps` consecutive blocks of per_step floats: one parallel pass over blocks of
// at most 64 Ki floats (memory-bound; serial passes would cap the speed-up of the weight kernels).
std::vector<int64_t> count_nonzero_steps(const float* p, int64_t steps, int64_t per_step) {
  constexpr int64_t kPiece = int64_t(1) << 16;
  const int64_t pieces = std::max<int64_t>(1, (per_step + kPiece - 1) / kPiece);
  std::vector<int64_t> partial(size_t(steps * pieces), 0);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < steps * pieces; ++k) {
    const int64_t t = k / pieces, i0 = (k % pieces) * kPiece, i1 = std::min(per_step, i0 + kPiece);
    const float* q = p + t * per_step;
    int64_t c = 0;
    for (int64_t i = i0; i < i1; ++i) c += q[i] != 0.0f;
    partial[size_t(k)] = c;
  }
  std::vector<int64_t> counts(size_t(steps), 0);
  for (int64_t k = 0; k < steps * pieces; ++k) counts[size_t(k / pieces)] += partial[size_t(k)];
  return counts;
}

// [B, ...] -> [steps * B, ...], the same batch at every step (a static input read by a dynamic layer).
void repeat_steps(const Tensor& x, int64_t steps, Tensor& out) {
  Shape s = x.shape();
  s[0] *= steps;
  out.resize(s);
  const int64_t n = x.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < steps * n; ++i) out[i] = x[i % n];
}

// Poisson rate code of a chunk (philox.hpp: the same spikes as every other backend for the same seed).
void poisson_encode(const Network& net, const Tensor& images, const StepChunk& chunk, uint64_t seed, Tensor& out) {
  Shape s = images.shape();
  s[0] *= chunk.steps;
  out.resize(s);
  const int64_t n = images.numel(), C = images.dim(1), inner = n / (images.dim(0) * C);
  const auto& pre = net.preprocessing();
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < chunk.steps * n; ++k) {
    const int64_t t = k / n, i = k % n, c = (i / inner) % C;
    const float mean = pre.identity() ? 0.0f : pre.mean[size_t(c)], std = pre.identity() ? 1.0f : pre.std[size_t(c)];
    out[k] = philox::poisson_pixel(seed, uint64_t(chunk.t0 + t), uint64_t(i), images[i], mean, std);
  }
}

// Sum of each plane of x [N, C, ...] over its positions (in memory order): [N · C].
std::vector<double> plane_sums(const Tensor& x, int64_t C) {
  const int64_t planes = x.dim(0) * C, inner = x.numel() / std::max<int64_t>(1, planes);
  std::vector<double> s(size_t(planes), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < inner; ++i) sum += x[p * inner + i];
    s[size_t(p)] = sum;
  }
  return s;
}

class CpuProgram : public Program {
 public:
  CpuProgram(const Network& net, EventPolicy events) : Program(net) {
    net.validate();
    for (int i = 0; i < net.size(); ++i) {
      kernels.push_back(cpu::make_kernel(net.layer(i), net.input_shapes(i)));
      kernels.back()->set_event_policy(events);
    }
  }

  cpu::SpikingKernel& spiking(int node) const {
    auto* k = dynamic_cast<cpu::SpikingKernel*>(kernels.at(size_t(node)).get());
    if (!k)
      throw Error("layer '" + network().layer(node).name() + "' (" + network().layer(node).type() +
                  "): its cpu kernel is not a spiking kernel (no bias, no calibration replay)");
    return *k;
  }
  Tensor neuron_bias(int node, bool* constant) const override {
    const auto& k = spiking(node);
    if (constant) *constant = k.bias_constant();
    return k.bias();
  }
  void set_neuron_bias(int node, const Tensor& bias, bool constant) override { spiking(node).set_bias(bias, constant); }

  std::vector<std::unique_ptr<cpu::Kernel>> kernels;

  // simulate_slice's activation buffers, kept from one call to the next: a sweep simulates batch after
  // batch of the same shapes, and fresh buffers page-fault (and zero) a few hundred MiB each time: on
  // ResNet-18 3x224x224 ~0.9 M page faults per 64 images, ~20 % of the sweep. A call that finds them busy
  // (concurrent simulations of one program) uses buffers of its own.
  struct Buffers {
    std::vector<Tensor> static_out, slots, repeated;  // slots: activation_slots.hpp
    std::vector<Tensor> converted;  // per producer: its output in the other layout (activation_layout.hpp)
    Tensor x_chunk;
    std::vector<std::unique_ptr<cpu::KernelState>> states;  // per node, made for state_batch images
    std::vector<int64_t> state_batch;
  };
  Buffers buffers;
  std::mutex buffers_in_use;
};

// What a probe sees of one neuron layer on one chunk.
class CpuNeuronAccess : public NeuronLayerAccess {
 public:
  struct Shared {  // per simulation: the probe's own membranes and the ANN reference
    std::map<int, std::unique_ptr<cpu::KernelState>> shadow;
    std::map<int, Tensor> ann;
    std::map<int, std::vector<double>> ann_sums;  // per sample and channel
  };

  CpuNeuronAccess(CpuProgram& prog, Shared& shared, int node, const StepChunk& chunk, const Tensor& input)
      : prog_(prog), shared_(shared), node_(node), chunk_(chunk), input_(input), kernel_(prog.spiking(node)) {}

  int node() const override { return node_; }
  const StepChunk& chunk() const override { return chunk_; }
  int64_t channels() const override { return kernel_.channels(); }

  int64_t positions() const override { return input_.numel() / (chunk_.steps * chunk_.batch * channels()); }

  const std::vector<double>& ann_sample_sums() override {
    auto it = shared_.ann_sums.find(node_);
    require(it != shared_.ann_sums.end(), "calibration probe: no ANN reference for layer '" +
                                              prog_.network().layer(node_).name() + "' (wants_ann_reference)");
    return it->second;
  }

  std::vector<double> replay_step_sums(int64_t t, const std::vector<float>& bias, bool commit, float nudge) override {
    require(t >= 0 && t < chunk_.steps, "calibration probe: step outside the chunk");
    require(int64_t(bias.size()) == channels(), "calibration probe: bias row has the wrong length");
    auto& st = shared_.shadow[node_];
    if (!st) st = kernel_.make_state(chunk_.batch);
    const Tensor* ann = nullptr;
    if (nudge != 0.0f) {
      auto it = shared_.ann.find(node_);
      require(it != shared_.ann.end(), "calibration probe: a nudged replay needs the ANN reference");
      ann = &it->second;
    }
    std::vector<double> sum(size_t(channels()), 0.0);
    kernel_.replay_step(input_, chunk_, t, bias.data(), st.get(), commit, nudge, ann, sum);
    return sum;
  }

  Tensor bias() const override { return kernel_.bias(); }
  bool bias_constant() const override { return kernel_.bias_constant(); }
  void set_bias(const Tensor& bias, bool constant) override {
    require(output_ == nullptr, "calibration probe: set_bias only before the layer runs");
    kernel_.set_bias(bias, constant);
  }

  void set_output(const Tensor* out) { output_ = out; }
  const std::vector<double>& output_channel_sums() override {
    require(output_ != nullptr, "calibration probe: output statistics only after the layer ran");
    if (out_sums_.empty()) {
      const int64_t C = channels(), B = chunk_.batch;
      const std::vector<double> planes = plane_sums(*output_, C);  // [steps · B · C]
      out_sums_.assign(size_t(chunk_.steps * C), 0.0);
      for (int64_t t = 0; t < chunk_.steps; ++t)
        for (int64_t p = 0; p < B * C; ++p) out_sums_[size_t(t * C + p % C)] += planes[size_t(t * B * C + p)];
    }
    return out_sums_;
  }

 private:
  CpuProgram& prog_;
  Shared& shared_;
  int node_;
  StepChunk chunk_;
  const Tensor& input_;
  cpu::SpikingKernel& kernel_;
  const Tensor* output_ = nullptr;
  std::vector<double> out_sums_;
};

// The ANN view through the kernels; keeps the outputs of the nodes in `keep` (all when keep is null).
Tensor run_ann(CpuProgram& prog, const Tensor& images, const std::vector<char>* keep, std::vector<Tensor>& outs) {
  const Network& net = prog.network();
  const Tensor x = preprocess(net, images);
  outs.assign(size_t(net.size()), Tensor());
  const std::vector<int> last = net.last_use();
  for (int i = 0; i < net.size(); ++i) {
    std::vector<const Tensor*> ins;
    for (int j : net.inputs(i)) ins.push_back(j == Network::kInput ? &x : &outs[size_t(j)]);
    prog.kernels[size_t(i)]->forward(ins, outs[size_t(i)]);
    for (int j : net.inputs(i))
      if (j >= 0 && last[size_t(j)] == i && !(keep == nullptr || (*keep)[size_t(j)])) outs[size_t(j)] = Tensor();
  }
  return outs.back();
}

}  // namespace

CpuBackend::CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_num_procs()), events_(EventPolicy::Auto) {
  check_range(int64_t(threads), limits::threads(), "threads");  // far too many crash inside libgomp
  if (const char* env = std::getenv("SNNC_CPU_EVENTS")) events_ = parse_event_policy(env, "SNNC_CPU_EVENTS");
  if (const char* env = std::getenv("SNNC_CPU_CHANNELS_LAST")) {
    const std::string v = env;
    require(v == "on" || v == "off", "SNNC_CPU_CHANNELS_LAST must be on or off, not '" + v + "'");
    channels_last_ = v == "on";
  }
}

std::string CpuBackend::description() const { return "cpu (" + std::to_string(threads_) + " threads)"; }

std::unique_ptr<Program> CpuBackend::prepare(const Network& net) { return std::make_unique<CpuProgram>(net, events_); }

Tensor CpuBackend::forward_ann(Program& program, const Tensor& images, std::vector<Tensor>* node_outputs) {
  ScopedThreads guard(threads_);
  auto& prog = dynamic_cast<CpuProgram&>(program);
  std::vector<Tensor> outs;
  const std::vector<char> keep_none(size_t(prog.network().size()), 0);
  Tensor result = run_ann(prog, images, node_outputs ? nullptr : &keep_none, outs);
  if (node_outputs) *node_outputs = std::move(outs);
  return result;
}

namespace {
// Activations per chunk that stay in the last-level cache (48 MiB here): a chunk of a few images over a
// few steps runs layer after layer out of cache instead of streaming every activation through DRAM.
constexpr int64_t kCacheBudget = int64_t(32) << 20;
// Nominal steps per chunk of a slice, and the fewest samples (images × steps) per chunk and thread: a
// weight layer's call then serves enough samples to pay for streaming its weights and for splitting
// into work items, and a membrane is loaded once per 8 steps. Measured on the Zen 5 VM
// (engine_throughput, ResNet-18, 8 interleaved pairs): 4 images × 8 steps per chunk +3 % (all pairs)
// over 2 × 4; 8 × 8, 2 × 16, 1 × 16 and 2 × 8 were no better than 4 × 8 (bench/README.md, fifth round).
constexpr int64_t kSliceSteps = 8;
constexpr int64_t kMinSamplesPerThread = 16;

// Appends slice `part` (images [b0, b0 + part.batch)) of a batch of `batch` images to `r`.
void merge_slice(BatchSimulation& r, const BatchSimulation& part, int64_t b0, int64_t batch) {
  const int64_t T = part.timesteps, nb = part.batch, K = part.readout.dim(1);
  if (r.predictions.empty()) {
    r.timesteps = T;
    r.batch = batch;
    r.predictions.assign(size_t(T * batch), 0);
    r.readout = Tensor({batch, K}, 0.0f);
    r.weight_nodes = part.weight_nodes;
    r.spikes.assign(part.spikes.size(), std::vector<double>(size_t(T), 0.0));
    r.synaptic_ops.assign(part.synaptic_ops.size(), std::vector<double>(size_t(T), 0.0));
    r.dense_macs.assign(part.dense_macs.size(), std::vector<double>(size_t(T), 0.0));
    r.profile.assign(part.profile.size(), {});
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < nb; ++b) r.predictions[size_t(t * batch + b0 + b)] = part.predictions[size_t(t * nb + b)];
  std::copy(part.readout.data(), part.readout.data() + nb * K, r.readout.data() + b0 * K);
  auto add = [](std::vector<std::vector<double>>& into, const std::vector<std::vector<double>>& from) {
    for (size_t l = 0; l < from.size(); ++l)
      for (size_t t = 0; t < from[l].size(); ++t) into[l][t] += from[l][t];
  };
  add(r.spikes, part.spikes);
  add(r.synaptic_ops, part.synaptic_ops);
  add(r.dense_macs, part.dense_macs);
  for (size_t i = 0; i < part.profile.size(); ++i) {
    r.profile[i].seconds += part.profile[i].seconds;
    r.profile[i].path = part.profile[i].path;
    r.profile[i].input_density = part.profile[i].input_density;
    r.profile[i].channels_last = part.profile[i].channels_last;
  }
}
}  // namespace

BatchSimulation CpuBackend::simulate(Program& program, const Tensor& images, const SimulationOptions& opts,
                                     NeuronProbe* probe) {
  ScopedThreads guard(threads_);
  // Images are independent: without a probe (which needs whole-batch statistics), the batch runs in
  // slices small enough for a chunk to stay in cache, at least kMinSamplesPerThread samples per thread
  // per chunk.
  if (!probe && images.rank() >= 1 && images.dim(0) > 1) {
    const SimulationPlan whole = make_simulation_plan(program.network(), opts, images.dim(0));
    const int64_t B = images.dim(0), per_image = std::max<int64_t>(1, whole.bytes_per_image_step);
    const int64_t samples = std::max<int64_t>(kMinSamplesPerThread * threads_, kCacheBudget / per_image);
    const int64_t slice = std::min(B, std::max<int64_t>(1, samples / kSliceSteps));
    if (slice < B) {
      SimulationOptions o = opts;
      const int64_t budget_steps = std::max<int64_t>(1, opts.memory_budget / (per_image * slice));
      o.max_chunk_steps = opts.max_chunk_steps > 0 ? opts.max_chunk_steps
                                                   : std::max<int64_t>(1, std::min(samples / slice, budget_steps));
      BatchSimulation r;
      for (int64_t b0 = 0; b0 < B; b0 += slice) {
        const int64_t nb = std::min(slice, B - b0);
        merge_slice(r, simulate_slice(program, images.slice0(b0, nb), o, nullptr), b0, B);
      }
      return r;
    }
  }
  return simulate_slice(program, images, opts, probe);
}

BatchSimulation CpuBackend::simulate_slice(Program& program, const Tensor& images, const SimulationOptions& opts,
                                           NeuronProbe* probe) {
  auto& prog = dynamic_cast<CpuProgram&>(program);
  const Network& net = prog.network();
  require(images.rank() >= 1 && images.dim(0) > 0, "simulate: empty batch");
  const SimulationPlan plan = make_simulation_plan(net, opts, images.dim(0));
  const int64_t T = plan.timesteps, B = plan.batch;
  const int N = net.size();
  const Tensor x_static = plan.direct ? preprocess(net, images) : Tensor();
  if (!plan.direct) check_input_shape(net, images);

  CpuNeuronAccess::Shared probe_data;
  if (probe && probe->wants_ann_reference()) {
    std::vector<char> keep(size_t(N), 0);
    for (int i : plan.neuron_nodes) keep[size_t(i)] = probe->observes(i);
    std::vector<Tensor> ann;
    run_ann(prog, images, &keep, ann);
    for (int i : plan.neuron_nodes)
      if (keep[size_t(i)]) {
        probe_data.ann_sums[i] = plane_sums(ann[size_t(i)], net.output_shape(i)[0]);
        probe_data.ann[i] = std::move(ann[size_t(i)]);
      }
  }

  Accountant accountant(plan);
  BatchSimulation r;
  r.timesteps = T;
  r.batch = B;
  r.predictions.assign(size_t(T * B), 0);
  const int out_node = plan.output_node;
  const int64_t K = plan.classes;
  r.readout = Tensor({B, K}, 0.0f);

  r.profile.assign(size_t(N), {});
  using Clock = std::chrono::steady_clock;
  // Output buffers live across chunks: same shapes every chunk, so no reallocation or zero-filling
  // (serial page-fault work that otherwise rivals the GEMMs). Their total is what the chunk size allows.
  std::unique_lock<std::mutex> own_buffers(prog.buffers_in_use, std::try_to_lock);
  CpuProgram::Buffers private_buffers;
  CpuProgram::Buffers& buffers = own_buffers.owns_lock() ? prog.buffers : private_buffers;
  // Kernel states (membranes, running sums) too: a state of the same batch size is reset in place
  // rather than made anew (a sweep's slices of ResNet-18 would otherwise allocate, page-fault and fill
  // ~9 MB per image each time).
  std::vector<std::unique_ptr<cpu::KernelState>>& states = buffers.states;
  states.resize(size_t(N));
  buffers.state_batch.resize(size_t(N), -1);
  for (int i = 0; i < N; ++i) {
    const size_t si = size_t(i);
    if (!net.layer(i).stateful()) continue;
    const bool reset = states[si] && buffers.state_batch[si] == B && prog.kernels[si]->reset_state(*states[si]);
    if (!reset) {
      states[si] = prog.kernels[si]->make_state(B);
      buffers.state_batch[si] = B;
    }
  }
  std::vector<Tensor>& static_out = buffers.static_out;
  static_out.resize(size_t(N));
  // Static outputs repeated over a chunk's steps, for dynamic readers; slot N is the network input.
  std::vector<Tensor>& repeated = buffers.repeated;
  repeated.resize(size_t(N) + 1);
  std::vector<int64_t> repeated_steps(static_cast<size_t>(N) + 1, 0);
  Tensor& x_chunk = buffers.x_chunk;
  // Per-step non-zero counts of dynamic outputs, counted once per chunk: a neuron's spikes feed the
  // accountant and every weight layer that reads them (which also learns their density from it).
  std::vector<std::vector<int64_t>> step_nonzeros(static_cast<size_t>(N));
  std::vector<int64_t> counted_at(static_cast<size_t>(N), -1);
  // Residual adds fused into the neuron layer that alone reads them (the neuron sums the two inputs as
  // it steps, the same float sum): one pass over the chunk's activations instead of two.
  std::vector<int> fused_add(size_t(N), -1), fused_into(size_t(N), -1), staged_by(size_t(N), -1);
  if (!probe) {
    std::vector<int> readers(size_t(N), 0);
    for (int i = 0; i < N; ++i)
      for (int j : net.inputs(i))
        if (j >= 0) ++readers[size_t(j)];
    for (int i = 0; i < N; ++i) {
      const auto& in = net.inputs(i);
      if (in.size() != 1 || in[0] < 0 || plan.is_static[size_t(i)]) continue;
      const int a = in[0];
      if (net.layer(a).type() != "add" || readers[size_t(a)] != 1 || a == out_node || plan.is_static[size_t(a)] ||
          net.inputs(a).size() != 2 || !dynamic_cast<cpu::NeuronKernel*>(prog.kernels[size_t(i)].get()))
        continue;
      fused_add[size_t(i)] = a;
      fused_into[size_t(a)] = i;
    }
    // Per-plane stages (spiking max pooling) fused into the neuron layer that alone feeds them: the
    // neuron's spikes are pooled plane by plane while in cache and never stored.
    for (int m = 0; m < N; ++m) {
      const auto& in = net.inputs(m);
      const cpu::PlaneStage* stage = prog.kernels[size_t(m)]->plane_stage();
      if (!stage || in.size() != 1 || in[0] < 0 || plan.is_static[size_t(m)]) continue;
      const int i = in[0];
      const auto* neuron = dynamic_cast<const cpu::NeuronKernel*>(prog.kernels[size_t(i)].get());
      // The neuron's planes (one per image and channel) must be the stage's.
      if (!neuron || readers[size_t(i)] != 1 || i == out_node || plan.is_static[size_t(i)] ||
          numel_of(net.output_shape(i)) != neuron->channels() * stage->plane_input_size())
        continue;
      staged_by[size_t(i)] = m;
      fused_into[size_t(m)] = i;
    }
  }
  // Dynamic outputs live in buffers shared by nodes whose outputs are not needed at the same time
  // (activation_slots.hpp). A fused add has no output; a neuron with a fused stage writes the stage's.
  std::vector<int> written_at(size_t(N), -1), read_until(size_t(N), -1);
  std::vector<int64_t> per_sample(size_t(N), 0);
  for (int j = 0; j < N; ++j) {
    per_sample[size_t(j)] = numel_of(net.output_shape(j));
    if (plan.is_static[size_t(j)] || staged_by[size_t(j)] >= 0) continue;
    const int host = fused_into[size_t(j)];
    if (host < 0) written_at[size_t(j)] = j;
    else if (staged_by[size_t(host)] == j) written_at[size_t(j)] = host;
    read_until[size_t(j)] = std::max(read_until[size_t(j)], written_at[size_t(j)]);
  }
  for (int r = 0; r < N; ++r) {
    const int at = fused_into[size_t(r)] >= 0 ? fused_into[size_t(r)] : r;  // a fused node reads where it runs
    for (int j : net.inputs(r))
      if (j >= 0) read_until[size_t(j)] = std::max(read_until[size_t(j)], at);
  }
  read_until[size_t(out_node)] = N;  // the readout reads it after every layer

  // Channels-last activations (kernel.hpp): decided once for the whole simulation (a state keeps its
  // layout across chunks), never with a probe (which reads NCHW planes).
  const std::vector<char> channels_last =
      probe || !channels_last_ ? std::vector<char>(size_t(N), 0) : cpu::plan_channels_last(net, prog.kernels, plan, fused_into, staged_by);
  for (int i = 0; i < N; ++i)
    if (auto* neuron = dynamic_cast<cpu::NeuronKernel*>(prog.kernels[size_t(i)].get()); neuron && states[size_t(i)])
      neuron->set_state_layout(*states[size_t(i)], channels_last[size_t(i)] != 0);
  // An input in the other layout than its reader takes is converted once per chunk (kept per producer).
  std::vector<Tensor>& converted = buffers.converted;
  converted.resize(size_t(N));
  std::vector<int64_t> converted_at(size_t(N), -1);
  const cpu::ActivationSlots slot_plan = cpu::plan_activation_slots(written_at, read_until, per_sample);
  buffers.slots.resize(size_t(slot_plan.count));
  Tensor no_output;
  std::vector<Tensor*> outs(size_t(N), &no_output);
  for (int j = 0; j < N; ++j)
    if (slot_plan.slot[size_t(j)] >= 0) outs[size_t(j)] = &buffers.slots[size_t(slot_plan.slot[size_t(j)])];

  for (int64_t t0 = 0; t0 < T; t0 += plan.chunk_steps) {
    const StepChunk chunk{t0, std::min(plan.chunk_steps, T - t0), B};
    const int64_t steps = chunk.steps;
    auto nonzeros = [&](int node, const Tensor& t) -> const std::vector<int64_t>& {
      if (counted_at[size_t(node)] != t0) {
        step_nonzeros[size_t(node)] = count_nonzero_steps(t.data(), steps, t.numel() / steps);
        counted_at[size_t(node)] = t0;
      }
      return step_nonzeros[size_t(node)];
    };
    if (!plan.direct) poisson_encode(net, images, chunk, opts.seed, x_chunk);
    for (int i = 0; i < N; ++i) {
      const size_t si = size_t(i);
      if (plan.is_static[si] && t0 > 0) continue;  // computed in the first chunk, valid for every step
      if (fused_into[si] >= 0) {
        r.profile[si].path = "fused";  // summed (an add) or pooled (a plane stage) by its neuron layer
        continue;
      }
      std::vector<const Tensor*> ins;
      for (int j : net.inputs(fused_add[si] >= 0 ? fused_add[si] : i)) {
        const bool j_static = plan.node_static(j);
        const Tensor& src = j == Network::kInput ? (plan.direct ? x_static : x_chunk)
                                                 : (j_static ? static_out[size_t(j)] : *outs[size_t(j)]);
        // A probe replays steps from the chunk's input, so it gets every step spelled out.
        if (j_static && !plan.is_static[si] && (probe || !prog.kernels[si]->reads_static_inputs())) {
          const size_t slot = j == Network::kInput ? size_t(N) : size_t(j);
          if (repeated_steps[slot] != steps) {
            repeat_steps(src, steps, repeated[slot]);
            repeated_steps[slot] = steps;
          }
          ins.push_back(&repeated[slot]);
        } else if (j >= 0 && channels_last[size_t(j)] != cpu::reads_channels_last(*prog.kernels[si], channels_last[si],
                                                                                       channels_last[size_t(j)])) {
          if (converted_at[size_t(j)] != (j_static ? 0 : t0)) {  // a static one once; timed as part of this reader
            const auto converting = Clock::now();
            cpu::convert_layout(src, channels_last[size_t(j)] != 0, converted[size_t(j)]);
            converted_at[size_t(j)] = t0;
            r.profile[si].seconds += std::chrono::duration<double>(Clock::now() - converting).count();
          }
          ins.push_back(&converted[size_t(j)]);
        } else {
          ins.push_back(&src);
        }
      }

      cpu::Kernel& kernel = *prog.kernels[si];
      if (kernel.supports_channels_last()) {
        const int first = net.inputs(fused_add[si] >= 0 ? fused_add[si] : i)[0];
        const bool in_cl = first >= 0 && cpu::reads_channels_last(kernel, channels_last[si], channels_last[size_t(first)]);
        kernel.set_layouts(in_cl, channels_last[si] != 0);
      }
      const auto started = Clock::now();
      if (plan.is_static[si]) {
        kernel.forward(ins, static_out[si]);
        r.profile[si].seconds += std::chrono::duration<double>(Clock::now() - started).count();
        if (plan.weight_slot[si] >= 0) accountant.static_weight(i);
        continue;
      }
      const bool probed = probe && plan.neuron_slot[si] >= 0 && probe->observes(i);
      std::unique_ptr<CpuNeuronAccess> access;
      if (probed) {
        access = std::make_unique<CpuNeuronAccess>(prog, probe_data, i, chunk, *ins[0]);
        probe->before_layer(*access);
      }
      const int source = net.inputs(i)[0];
      const bool known_events = plan.counts_events[si] && source >= 0;  // counted once per chunk anyway
      if (known_events || (probe && plan.weight_slot[si] >= 0)) {
        std::vector<int64_t> counts = {0, ins[0]->numel()};
        if (known_events)
          for (int64_t c : nonzeros(source, *ins[0])) counts[0] += c;
        else
          counts[0] = count_nonzero_steps(ins[0]->data(), 1, ins[0]->numel())[0];
        // Data-parallel calibration: the path follows the density of the whole batch, on every process.
        if (probe) probe->combine_counts(counts);
        kernel.hint_input_density(double(counts[0]) / double(std::max<int64_t>(1, counts[1])));
      }
      if (staged_by[si] >= 0) {
        const size_t m = size_t(staged_by[si]);
        static_cast<cpu::NeuronKernel&>(kernel).forward_snn_staged(ins, *outs[m], states[si].get(), chunk,
                                                                   *prog.kernels[m]->plane_stage(), states[m].get());
      } else {
        kernel.forward_snn(ins, *outs[si], states[si].get(), chunk);
      }
      r.profile[si].seconds += std::chrono::duration<double>(Clock::now() - started).count();
      // Spikes the kernel counted while writing them (a probe may rewrite the output, so not then).
      const std::vector<int64_t>* counted = probed ? nullptr : kernel.output_nonzeros();
      if (counted && int64_t(counted->size()) == steps) {
        step_nonzeros[si] = *counted;
        counted_at[si] = t0;
      }
      r.profile[si].path = kernel.last_choice().path;
      r.profile[si].channels_last = channels_last[si] != 0;
      r.profile[si].input_density = kernel.last_choice().input_density;
      if (probed) {
        access->set_output(outs[si]);
        probe->after_layer(*access);
      }

      if (plan.weight_slot[si] >= 0) {
        const int64_t per_step = ins[0]->numel() / steps;
        if (plan.counts_events[si] && source >= 0) {
          const auto& nz = nonzeros(source, *ins[0]);
          for (int64_t t = 0; t < steps; ++t) accountant.weight_step(i, t0 + t, double(nz[size_t(t)]), double(per_step));
        } else if (plan.counts_events[si]) {
          const auto nz = count_nonzero_steps(ins[0]->data(), steps, per_step);
          for (int64_t t = 0; t < steps; ++t) accountant.weight_step(i, t0 + t, double(nz[size_t(t)]), double(per_step));
        } else {
          for (int64_t t = 0; t < steps; ++t) accountant.weight_step(i, t0 + t);
        }
      }
      if (plan.neuron_slot[si] >= 0) {
        const auto& nz = nonzeros(i, *outs[si]);
        for (int64_t t = 0; t < steps; ++t) accountant.spikes(i, t0 + t, double(nz[size_t(t)]));
      }
    }

    // Anytime readout: running sum of the readout over steps; prediction = its argmax after each step.
    const bool out_static = plan.is_static[size_t(out_node)];
    const Tensor& y = out_static ? static_out[size_t(out_node)] : *outs[size_t(out_node)];
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
  accountant.finish(r);
  return r;
}

}  // namespace snn
