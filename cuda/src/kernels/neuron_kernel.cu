// CUDA kernel of NeuronLayer. SNN view: one thread per neuron runs the neuron core's recurrence over the
// whole chunk with the membrane in a register: x[t] read once, s[t] written once (coalesced along the
// neuron index), v read and written once per chunk. The model/reset pair is a template parameter
// (neuron::dispatch), so the inner loop has no branches on the config. ANN view: neuron::activation.
// Calibration replays run the same neuron::step, one step at a time, on the probe's own membrane.
#include "launch.cuh"
#include "snn/cuda/check.hpp"
#include "snn/cuda/neuron_kernel.hpp"
#include "snn/cuda/ops.hpp"
#include "snn/error.hpp"
#include "snn/neuron_core.hpp"

namespace snn::cuda {

namespace {

// Steps are taken kUnroll at a time with their inputs loaded first: each thread then has kUnroll loads in
// flight instead of one, which a memory-bound kernel needs to approach the device's bandwidth. The
// recurrence itself stays strictly in order.
constexpr int kUnroll = 4;

template <bool kLeaky, bool kResetZero>
__global__ void neuron_chunk_kernel(const float* __restrict__ x, float* __restrict__ s, float* __restrict__ v,
                                    const float* __restrict__ theta, const float* __restrict__ bias, int64_t bias_steps,
                                    bool bias_constant, int64_t t0, int64_t steps, int64_t per_step, int64_t C,
                                    int64_t inner, float beta) {
  SNN_GRID_LOOP(n, per_step) {
    const int64_t c = (n / inner) % C;
    const float th = theta[c];
    float vn = v[n];
    int64_t t = 0;
    for (; t + kUnroll <= steps; t += kUnroll) {
      float xs[kUnroll], bs[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        xs[u] = x[(t + u) * per_step + n];
        bs[u] = neuron::temporal_bias(bias, bias_steps, bias_constant, t0 + t + u, C, c);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        s[(t + u) * per_step + n] = neuron::step<kLeaky, kResetZero>(vn, xs[u], bs[u], th, beta);
    }
    for (; t < steps; ++t) {
      const float b = neuron::temporal_bias(bias, bias_steps, bias_constant, t0 + t, C, c);
      s[t * per_step + n] = neuron::step<kLeaky, kResetZero>(vn, x[t * per_step + n], b, th, beta);
    }
    v[n] = vn;
  }
}

// Signed neurons (neuron_core.hpp): the same, with each neuron's net spike count n in a second register.
template <bool kLeaky>
__global__ void signed_neuron_chunk_kernel(const float* __restrict__ x, float* __restrict__ s, float* __restrict__ v,
                                           float* __restrict__ count, const float* __restrict__ theta,
                                           const float* __restrict__ bias, int64_t bias_steps, bool bias_constant,
                                           int64_t t0, int64_t steps, int64_t per_step, int64_t C, int64_t inner,
                                           float beta, float cap) {
  SNN_GRID_LOOP(n, per_step) {
    const int64_t c = (n / inner) % C;
    const float th = theta[c];
    float vn = v[n], cn = count[n];
    for (int64_t t = 0; t < steps; ++t) {
      const float b = neuron::temporal_bias(bias, bias_steps, bias_constant, t0 + t, C, c);
      s[t * per_step + n] = neuron::signed_step<kLeaky>(vn, cn, x[t * per_step + n], b, th, beta, cap);
    }
    v[n] = vn;
    count[n] = cn;
  }
}

__global__ void activation_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n, int64_t C,
                                  int64_t inner, const float* __restrict__ theta, SourceActivation act, int levels) {
  SNN_GRID_LOOP(i, n) out[i] = neuron::activation(x[i], act, theta[(i / inner) % C], levels);
}

// One replayed step: spikes to s; the membrane is stored only when committing. With `ann`, the membrane
// is then nudged by −nudge·(s − a) (CPU: v -= nudge * (s - a), same rounding).
// count: the signed neurons' net spike counts (null for binary neurons).
__global__ void replay_kernel(const float* __restrict__ x, float* __restrict__ v, float* __restrict__ count,
                              float* __restrict__ s, const float* __restrict__ theta,
                              const float* __restrict__ bias_row, int64_t n, int64_t C, int64_t inner, NeuronConfig cfg,
                              bool commit, float nudge, const float* __restrict__ ann) {
  SNN_GRID_LOOP(i, n) {
    const int64_t c = (i / inner) % C;
    float vn = v[i], cn = count ? count[i] : 0.0f;
    const float sp = neuron::step(vn, cn, x[i], bias_row[c], theta[c], cfg);
    if (ann) vn = neuron::sub(vn, neuron::mul(nudge, neuron::sub(sp, ann[i])));
    if (commit) {
      v[i] = vn;
      if (count) count[i] = cn;
    }
    s[i] = sp;
  }
}

__global__ void fill_membrane_kernel(float* __restrict__ v, int64_t n, int64_t C, int64_t inner,
                                     const float* __restrict__ theta, float v_init) {
  SNN_GRID_LOOP(i, n) v[i] = neuron::initial_membrane(v_init, theta[(i / inner) % C]);
}

}  // namespace

NeuronKernel::NeuronKernel(const NeuronLayer& layer, const Shape& input, Context& context)
    : layer_(layer), context_(context), where_(where(layer)), inner_(numel_of(input) / layer.channels()) {
  require(!input.empty() && input[0] == layer.channels(),
          where_ + ": input " + to_string(input) + " does not have " + std::to_string(layer.channels()) + " channels");
  std::vector<float> theta(size_t(layer.channels())), spike_theta(theta.size());
  for (int64_t c = 0; c < layer.channels(); ++c) {
    theta[size_t(c)] = layer.theta(c);
    spike_theta[size_t(c)] = layer.spike_threshold(c);
  }
  theta_.upload(theta);
  spike_theta_.upload(spike_theta);
  set_bias(layer.bias(), layer.bias_constant());
}

void NeuronKernel::set_bias(const Tensor& bias, bool constant_over_time) {
  if (!bias.empty()) layer_.check_bias(bias, constant_over_time);
  bias_ = bias;
  bias_constant_ = !bias.empty() && constant_over_time;
  if (bias.empty())
    bias_device_.release();
  else
    bias_device_.upload(bias.data(), size_t(bias.numel()));
}

void NeuronKernel::forward(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out) {
  const DeviceTensor& x = *inputs.at(0);
  require(x.numel() % (layer_.channels() * inner_) == 0,
          where_ + ": input " + to_string(x.shape()) + " does not fit the layer");
  out.resize(x.shape());
  if (x.numel() == 0) return;
  activation_kernel<<<blocks_for(x.numel()), kThreads>>>(x.data(), out.data(), x.numel(), layer_.channels(), inner_,
                                                         theta_.data(), layer_.activation(), layer_.levels());
  check_launch("activation_kernel", where_);
}

std::unique_ptr<KernelState> NeuronKernel::make_state(int64_t batch) const {
  auto st = std::make_unique<State>();
  const int64_t C = layer_.channels(), n = batch * C * inner_;
  st->v.resize({batch, C * inner_});
  if (n > 0) {
    fill_membrane_kernel<<<blocks_for(n), kThreads>>>(st->v.data(), n, C, inner_, spike_theta_.data(),
                                                      layer_.config().v_init);
    check_launch("fill_membrane_kernel", where_);
  }
  if (layer_.config().spikes == Spikes::Signed) {
    st->count.resize({batch, C * inner_});
    if (n > 0) SNN_CUDA_CHECK(cudaMemset(st->count.data(), 0, size_t(n) * sizeof(float)), where_);  // 0.0f is all-zero bits
  }
  return st;
}

void NeuronKernel::forward_snn(const std::vector<const DeviceTensor*>& inputs, DeviceTensor& out, KernelState* state,
                               const StepChunk& chunk) {
  const DeviceTensor& x = *inputs.at(0);
  auto* st = static_cast<State*>(state);
  require(st != nullptr, where_ + ": no neuron state (make_state)");
  const int64_t B = chunk.batch, C = layer_.channels(), per_step = B * C * inner_;
  require(x.numel() == chunk.steps * per_step && st->v.numel() == per_step,
          where_ + ": input " + to_string(x.shape()) + " does not fit the state");
  out.resize(x.shape());
  if (x.numel() == 0) return;
  const float* bias = bias_.empty() ? nullptr : bias_device_.data();
  const int64_t bias_steps = bias_.empty() ? 0 : bias_.dim(0);
  const float beta = layer_.config().beta;
  const bool constant = bias_constant_;
  if (layer_.config().spikes == Spikes::Signed) {
    require(st->count.numel() == per_step, where_ + ": no spike counts in the signed neurons' state");
    if (layer_.config().model == NeuronModel::LIF)
      signed_neuron_chunk_kernel<true><<<blocks_for(per_step), kThreads>>>(
          x.data(), out.data(), st->v.data(), st->count.data(), spike_theta_.data(), bias, bias_steps, constant, chunk.t0,
          chunk.steps, per_step, C, inner_, beta, layer_.config().max_spikes);
    else
      signed_neuron_chunk_kernel<false><<<blocks_for(per_step), kThreads>>>(
          x.data(), out.data(), st->v.data(), st->count.data(), spike_theta_.data(), bias, bias_steps, constant, chunk.t0,
          chunk.steps, per_step, C, inner_, beta, layer_.config().max_spikes);
    check_launch("signed_neuron_chunk_kernel", where_);
    return;
  }
  neuron::dispatch(layer_.config(), [&](auto leaky, auto zero) {
    neuron_chunk_kernel<decltype(leaky)::value, decltype(zero)::value>
        <<<blocks_for(per_step), kThreads>>>(x.data(), out.data(), st->v.data(), spike_theta_.data(), bias, bias_steps,
                                             constant, chunk.t0, chunk.steps, per_step, C, inner_, beta);
  });
  check_launch("neuron_chunk_kernel", where_);
}

void NeuronKernel::replay_step(const DeviceTensor& x, const StepChunk& chunk, int64_t t, const std::vector<float>& bias,
                               KernelState* state, bool commit, float nudge, const DeviceTensor* ann,
                               std::vector<double>& channel_sum) {
  auto* st = static_cast<State*>(state);
  const int64_t B = chunk.batch, C = layer_.channels(), n = B * C * inner_;
  require(st != nullptr && st->v.numel() == n, where_ + ": the replay state does not fit the batch");
  require(t >= 0 && t < chunk.steps && x.numel() == chunk.steps * n, where_ + ": replay step outside the chunk");
  require(int64_t(bias.size()) == C, where_ + ": replay bias row has the wrong length");
  require(nudge == 0.0f || (ann != nullptr && ann->numel() == n),
          where_ + ": a nudged replay needs the ANN reference of the same batch");
  require(int64_t(channel_sum.size()) == C, where_ + ": replay channel sums have the wrong length");
  st->row.upload(bias);
  st->spikes.resize({B, C * inner_});
  if (n > 0) {
    float* count = st->count.numel() == n ? st->count.data() : nullptr;
    require(count != nullptr || layer_.config().spikes == Spikes::Binary,
            where_ + ": no spike counts in the signed neurons' state");
    replay_kernel<<<blocks_for(n), kThreads>>>(x.data() + t * n, st->v.data(), count, st->spikes.data(), spike_theta_.data(),
                                               st->row.data(), n, C, inner_, layer_.config(), commit, nudge,
                                               nudge != 0.0f ? ann->data() : nullptr);
    check_launch("replay_kernel", where_);
  }
  const std::vector<double> sums = channel_sums(st->spikes.data(), 1, B, C, inner_, context_);
  for (int64_t c = 0; c < C; ++c) channel_sum[size_t(c)] += sums[size_t(c)];
}

namespace {
const bool registered = kernels().add("neuron", [](const Layer& l, const std::vector<Shape>& in, Context& ctx) {
  return std::make_unique<NeuronKernel>(static_cast<const NeuronLayer&>(l), in.at(0), ctx);
});
}  // namespace

}  // namespace snn::cuda
