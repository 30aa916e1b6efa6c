// CPU kernel of NeuronLayer: every (image, channel) plane runs the neuron core's recurrence over the
// chunk with its membrane in cache; planes in parallel. The ANN view is the core's source activation.
#include "snn/cpu/neuron_kernel.hpp"

#include <algorithm>
#include <omp.h>

#include "snn/cpu/plane_stage.hpp"
#include "snn/error.hpp"

namespace snn::cpu {

namespace {
// Membranes of the planes stepped together (see run_snn): in L2 with their inputs' lines in flight.
constexpr int64_t kGroupBytes = 64 * 1024;

// n neurons of one plane, one step: s = spikes; returns nothing (callers count as they need). With a
// second input (x2 non-null: a residual add fused into this layer) the input is x + x2, the same float
// sum the add layer would have stored.
// Returns the number of spikes (non-zero outputs), counted while they are in registers: the backend
// needs them per step, and a second pass over the output would cost as much memory traffic again.
template <bool kLeaky, bool kResetZero>
inline int64_t step_plane(const float* x, const float* x2, float* v, float* s, int64_t n, float theta, float bias,
                          float beta) {
  int64_t fired = 0;
  if (x2)
    for (int64_t i = 0; i < n; ++i) {
      s[i] = neuron::step<kLeaky, kResetZero>(v[i], x[i] + x2[i], bias, theta, beta);
      fired += s[i] != 0.0f;
    }
  else
    for (int64_t i = 0; i < n; ++i) {
      s[i] = neuron::step<kLeaky, kResetZero>(v[i], x[i], bias, theta, beta);
      fired += s[i] != 0.0f;
    }
  return fired;
}

// The same for signed neurons, whose net spike counts are in `count`.
template <bool kLeaky>
inline int64_t signed_step_plane(const float* x, const float* x2, float* v, float* count, float* s, int64_t n,
                                 float theta, float bias, float beta, float cap) {
  int64_t fired = 0;
  if (x2)
    for (int64_t i = 0; i < n; ++i) {
      s[i] = neuron::signed_step<kLeaky>(v[i], count[i], x[i] + x2[i], bias, theta, beta, cap);
      fired += s[i] != 0.0f;
    }
  else
    for (int64_t i = 0; i < n; ++i) {
      s[i] = neuron::signed_step<kLeaky>(v[i], count[i], x[i], bias, theta, beta, cap);
      fired += s[i] != 0.0f;
    }
  return fired;
}
// Channels-last: n consecutive neurons of positions × channels (one step); theta and bias hold the
// channels' values repeated over the positions of a tile (kTileFloats floats, so the loops run long and
// vectorise as step_plane's do; no pointer aliases another, which the vectoriser must know). The same
// per-neuron arithmetic as step_plane, so both layouts give the same spikes bit for bit.
constexpr int64_t kTileFloats = 512;

template <bool kLeaky, bool kResetZero>
inline int64_t step_positions(const float* __restrict x, const float* __restrict x2, float* __restrict v,
                              float* __restrict s, int64_t n, int64_t tile, const float* __restrict theta,
                              const float* __restrict bias, float beta) {
  int64_t fired = 0;
  for (int64_t i0 = 0; i0 < n; i0 += tile) {
    const int64_t m = std::min(tile, n - i0);
    if (x2)
      for (int64_t i = 0; i < m; ++i) {
        s[i0 + i] = neuron::step<kLeaky, kResetZero>(v[i0 + i], x[i0 + i] + x2[i0 + i], bias[i], theta[i], beta);
        fired += s[i0 + i] != 0.0f;
      }
    else
      for (int64_t i = 0; i < m; ++i) {
        s[i0 + i] = neuron::step<kLeaky, kResetZero>(v[i0 + i], x[i0 + i], bias[i], theta[i], beta);
        fired += s[i0 + i] != 0.0f;
      }
  }
  return fired;
}

template <bool kLeaky>
inline int64_t signed_step_positions(const float* __restrict x, const float* __restrict x2, float* __restrict v,
                                     float* __restrict count, float* __restrict s, int64_t n, int64_t tile,
                                     const float* __restrict theta, const float* __restrict bias, float beta,
                                     float cap) {
  int64_t fired = 0;
  for (int64_t i0 = 0; i0 < n; i0 += tile) {
    const int64_t m = std::min(tile, n - i0);
    if (x2)
      for (int64_t i = 0; i < m; ++i) {
        s[i0 + i] = neuron::signed_step<kLeaky>(v[i0 + i], count[i0 + i], x[i0 + i] + x2[i0 + i], bias[i], theta[i],
                                                beta, cap);
        fired += s[i0 + i] != 0.0f;
      }
    else
      for (int64_t i = 0; i < m; ++i) {
        s[i0 + i] = neuron::signed_step<kLeaky>(v[i0 + i], count[i0 + i], x[i0 + i], bias[i], theta[i], beta, cap);
        fired += s[i0 + i] != 0.0f;
      }
  }
  return fired;
}
}  // namespace

NeuronKernel::NeuronKernel(const NeuronLayer& layer, const Shape& input)
    : layer_(layer), inner_(numel_of(input) / layer.channels()), bias_(layer.bias()), bias_constant_(layer.bias_constant()) {}

void NeuronKernel::set_bias(const Tensor& bias, bool constant_over_time) {
  if (!bias.empty()) layer_.check_bias(bias, constant_over_time);
  bias_ = bias;
  bias_constant_ = !bias.empty() && constant_over_time;
}

void NeuronKernel::forward(const std::vector<const Tensor*>& inputs, Tensor& out) {
  const Tensor& x = *inputs[0];
  out.resize(x.shape());
  const int64_t C = layer_.channels(), planes = x.numel() / inner_;
  const SourceActivation act = layer_.activation();
  const int levels = layer_.levels();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float theta = layer_.theta(p % C);
    const float* in = x.data() + p * inner_;
    float* o = out.data() + p * inner_;
    for (int64_t i = 0; i < inner_; ++i) o[i] = neuron::activation(in[i], act, theta, levels);
  }
}

std::unique_ptr<KernelState> NeuronKernel::make_state(int64_t batch) const {
  auto st = std::make_unique<State>();
  const int64_t C = layer_.channels();
  st->v.resize({batch, C * inner_});
  if (layer_.config().spikes == Spikes::Signed) st->count.resize({batch, C * inner_});
  reset_state(*st);
  return st;
}

bool NeuronKernel::reset_state(KernelState& state) const {
  auto& st = static_cast<State&>(state);
  const int64_t C = layer_.channels(), planes = st.v.numel() / inner_;
  if (st.channels_last) {
    std::vector<float> v0(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) v0[size_t(c)] = neuron::initial_membrane(layer_.config().v_init, layer_.spike_threshold(c));
    const int64_t positions = st.v.numel() / C;
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < positions; ++q) std::copy(v0.begin(), v0.end(), st.v.data() + q * C);
  } else {
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const float v0 = neuron::initial_membrane(layer_.config().v_init, layer_.spike_threshold(p % C));
      std::fill(st.v.data() + p * inner_, st.v.data() + (p + 1) * inner_, v0);
    }
  }
  st.count.fill(0.0f);
  return true;
}

void NeuronKernel::set_state_layout(KernelState& state, bool channels_last) const {
  auto& st = static_cast<State&>(state);
  if (st.channels_last == channels_last) return;
  st.channels_last = channels_last;
  reset_state(st);
}

void NeuronKernel::forward_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState* state,
                               const StepChunk& chunk) {
  run_snn(inputs, out, state, chunk, nullptr, nullptr);
}

void NeuronKernel::forward_snn_staged(const std::vector<const Tensor*>& inputs, Tensor& stage_out, KernelState* state,
                                      const StepChunk& chunk, const PlaneStage& stage, KernelState* stage_state) {
  require(stage.plane_input_size() == inner_, "layer '" + layer_.name() + "' (neuron): a fused stage needs planes of " +
                                                  std::to_string(inner_) + " values");
  run_snn(inputs, stage_out, state, chunk, &stage, stage_state);
}

void NeuronKernel::run_snn(const std::vector<const Tensor*>& inputs, Tensor& out, KernelState* state,
                           const StepChunk& chunk, const PlaneStage* stage, KernelState* stage_state) {
  const Tensor& x = *inputs[0];
  const Tensor* x2 = inputs.size() > 1 ? inputs[1] : nullptr;
  auto* st = static_cast<State*>(state);
  const int64_t B = chunk.batch, C = layer_.channels(), step = B * C * inner_;
  // An input of one step (a static producer's output, reads_static_inputs) is read at every step.
  auto step_stride = [&](const Tensor& in, const char* what) -> int64_t {
    if (in.numel() == chunk.steps * step) return step;
    if (in.numel() == step) return 0;
    throw Error("layer '" + layer_.name() + "' (neuron): " + what + " " + to_string(in.shape()) +
                " does not fit the state (" + std::to_string(B) + " images, " + std::to_string(chunk.steps) +
                " steps)");
  };
  const int64_t x_stride = step_stride(x, "input"), x2_stride = x2 ? step_stride(*x2, "fused add input") : 0;
  const int64_t steps = chunk.steps;
  if (stage) {
    Shape s = stage->stage_output_shape();
    s.insert(s.begin(), steps * B);
    out.resize(s);
  } else {
    Shape out_shape = x.shape();
    if (x_stride == 0) out_shape[0] *= steps;
    out.resize(out_shape);
  }
  if (inputs_channels_last()) {
    require(!stage && output_channels_last() && st->channels_last,
            "layer '" + layer_.name() + "' (neuron): channels-last inputs need a channels-last output and state");
    run_channels_last(x, x2, x_stride, x2_stride, out, *st, chunk);
    return;
  }
  require(!st->channels_last, "layer '" + layer_.name() + "' (neuron): a channels-last state given NCHW inputs");
  const int64_t stage_plane = stage ? stage->plane_output_size() : 0;
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  const int64_t bias_steps = bias_.empty() ? 0 : bias_.dim(0);
  const float beta = layer_.config().beta;
  output_nonzeros_.assign(size_t(steps), 0);
  int64_t* fired = output_nonzeros_.data();
  // Every (image, channel) plane runs its steps in order with its membrane in cache; groups of planes in
  // parallel. step(p, t, x, x2, s) steps plane p once and returns its spike count. With a stage, the
  // spikes go to a per-thread plane buffer that the stage consumes at once.
  // Planes go in groups of consecutive ones whose membranes fit kGroupBytes; each group runs its steps
  // in order, a step over all its planes at once. A step's inputs and outputs are then contiguous runs of
  // the group's size, not one plane's (ResNet-18's layer1: 12.5 KB, a few pages), which the hardware
  // prefetchers follow: the layers' inputs come from memory, and the neuron layers of ResNet-18 ran
  // ~20 % faster than plane by plane (bench/README.md). At least two groups per thread.
  const int64_t group = std::clamp<int64_t>(kGroupBytes / (inner_ * int64_t(sizeof(float))), 1,
                                            std::max<int64_t>(1, B * C / (2 * omp_get_max_threads())));
  const int64_t groups = (B * C + group - 1) / group;
  auto for_planes = [&](auto&& step_one) {
#pragma omp parallel
    {
      thread_local std::vector<float> plane, scratch;
      if (stage) {
        if (plane.size() < size_t(inner_)) plane.resize(size_t(inner_));
        if (scratch.size() < size_t(stage->plane_scratch_size())) scratch.resize(size_t(stage->plane_scratch_size()));
      }
#pragma omp for schedule(static) reduction(+ : fired[:steps])
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t t = 0; t < steps; ++t)
          for (int64_t p = g * group; p < std::min(B * C, (g + 1) * group); ++p) {
            const float* xp = x.data() + t * x_stride + p * inner_;
            const float* x2p = x2 ? x2->data() + t * x2_stride + p * inner_ : nullptr;
            float* o = stage ? plane.data() : out.data() + t * step + p * inner_;
            fired[t] += step_one(p, t, xp, x2p, o);
            if (stage) stage->step_plane(o, out.data() + (t * B * C + p) * stage_plane, stage_state, p, scratch.data());
          }
    }
  };
  if (layer_.config().spikes == Spikes::Signed) {
    const bool leaky = layer_.config().model == NeuronModel::LIF;
    const float cap = layer_.config().max_spikes;
    for_planes([&](int64_t p, int64_t t, const float* xp, const float* x2p, float* o) {
      const int64_t c = p % C;
      const float theta = layer_.spike_threshold(c);
      const float b = neuron::temporal_bias(bias, bias_steps, bias_constant_, chunk.t0 + t, C, c);
      float* v = st->v.data() + p * inner_;
      float* count = st->count.data() + p * inner_;
      return leaky ? signed_step_plane<true>(xp, x2p, v, count, o, inner_, theta, b, beta, cap)
                   : signed_step_plane<false>(xp, x2p, v, count, o, inner_, theta, b, beta, cap);
    });
    return;
  }
  neuron::dispatch(layer_.config(), [&](auto leaky, auto zero) {
    for_planes([&](int64_t p, int64_t t, const float* xp, const float* x2p, float* o) {
      const int64_t c = p % C;
      const float b = neuron::temporal_bias(bias, bias_steps, bias_constant_, chunk.t0 + t, C, c);
      return step_plane<decltype(leaky)::value, decltype(zero)::value>(xp, x2p, st->v.data() + p * inner_, o, inner_,
                                                                        layer_.spike_threshold(c), b, beta);
    });
  });
}

void NeuronKernel::run_channels_last(const Tensor& x, const Tensor* x2, int64_t x_stride, int64_t x2_stride,
                                     Tensor& out, State& st, const StepChunk& chunk) {
  const int64_t B = chunk.batch, C = layer_.channels(), steps = chunk.steps, step = B * C * inner_;
  const int64_t positions = B * inner_;  // of all images: [B][positions][C] is [B · positions][C]
  // θ and each step's bias row (neuron::temporal_bias per channel) repeated over a tile of positions.
  const int64_t tile = std::max<int64_t>(1, kTileFloats / C) * C;
  std::vector<float> theta(static_cast<size_t>(tile)), bias(static_cast<size_t>(steps * tile), 0.0f);
  const int64_t bias_steps = bias_.empty() ? 0 : bias_.dim(0);
  for (int64_t i = 0; i < tile; ++i) {
    const int64_t c = i % C;
    theta[size_t(i)] = layer_.spike_threshold(c);
    for (int64_t t = 0; t < steps; ++t)
      bias[size_t(t * tile + i)] =
          neuron::temporal_bias(bias_.empty() ? nullptr : bias_.data(), bias_steps, bias_constant_, chunk.t0 + t, C, c);
  }
  // Where every channel has the same threshold and, at each step, the same bias (one threshold per layer,
  // no temporal bias: the usual conversion), the channels-last step is the NCHW one with scalars: no
  // tiled θ and bias rows to load (channels-last neuron steps measured ~20 % slower with them).
  bool same_for_all_channels = true;
  for (int64_t i = 1; i < C && same_for_all_channels; ++i) {
    same_for_all_channels = theta[size_t(i)] == theta[0];
    for (int64_t t = 0; t < steps; ++t) same_for_all_channels &= bias[size_t(t * tile + i)] == bias[size_t(t * tile)];
  }
  const float beta = layer_.config().beta;
  output_nonzeros_.assign(size_t(steps), 0);
  int64_t* fired = output_nonzeros_.data();
  // Groups of consecutive positions whose membranes fit kGroupBytes step in order (see run_snn), at
  // least two groups per thread.
  const int64_t group = std::clamp<int64_t>(kGroupBytes / (C * int64_t(sizeof(float))), 1,
                                            std::max<int64_t>(1, positions / (2 * omp_get_max_threads())));
  const int64_t groups = (positions + group - 1) / group;
  const bool is_signed = layer_.config().spikes == Spikes::Signed;
  const bool leaky = layer_.config().model == NeuronModel::LIF;
  const float cap = layer_.config().max_spikes;
  auto for_groups = [&](auto&& step_group) {
#pragma omp parallel for schedule(static) reduction(+ : fired[:steps])
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t q0 = g * group, off = q0 * C, n = (std::min(positions, q0 + group) - q0) * C;
      for (int64_t t = 0; t < steps; ++t)
        fired[t] += step_group(x.data() + t * x_stride + off, x2 ? x2->data() + t * x2_stride + off : nullptr, off,
                               out.data() + t * step + off, n, bias.data() + t * tile);
    }
  };
  if (is_signed) {
    for_groups([&](const float* xp, const float* x2p, int64_t off, float* o, int64_t n, const float* b) {
      float* v = st.v.data() + off;
      float* count = st.count.data() + off;
      if (same_for_all_channels)
        return leaky ? signed_step_plane<true>(xp, x2p, v, count, o, n, theta[0], b[0], beta, cap)
                     : signed_step_plane<false>(xp, x2p, v, count, o, n, theta[0], b[0], beta, cap);
      return leaky ? signed_step_positions<true>(xp, x2p, v, count, o, n, tile, theta.data(), b, beta, cap)
                   : signed_step_positions<false>(xp, x2p, v, count, o, n, tile, theta.data(), b, beta, cap);
    });
    return;
  }
  neuron::dispatch(layer_.config(), [&](auto leaky_t, auto zero_t) {
    for_groups([&](const float* xp, const float* x2p, int64_t off, float* o, int64_t n, const float* b) {
      if (same_for_all_channels)
        return step_plane<decltype(leaky_t)::value, decltype(zero_t)::value>(xp, x2p, st.v.data() + off, o, n,
                                                                              theta[0], b[0], beta);
      return step_positions<decltype(leaky_t)::value, decltype(zero_t)::value>(xp, x2p, st.v.data() + off, o, n, tile,
                                                                                theta.data(), b, beta);
    });
  });
}

void NeuronKernel::replay_step(const Tensor& x, const StepChunk& chunk, int64_t t, const float* bias,
                               KernelState* state, bool commit, float nudge, const Tensor* ann,
                               std::vector<double>& channel_sum) {
  auto* st = static_cast<State*>(state);
  const int64_t B = chunk.batch, C = layer_.channels();
  require(nudge == 0.0f || ann != nullptr, "layer '" + layer_.name() + "': a nudged replay needs the ANN reference");
  // A trial (commit = false) steps a copy of each membrane value and leaves the state untouched (no
  // save and restore of the whole layer: exact solves try a dozen biases per step).
  std::vector<double> plane_sum(size_t(B * C));
  const NeuronConfig& cfg = layer_.config();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < B * C; ++p) {
    const int64_t c = p % C;
    const float theta = layer_.spike_threshold(c), b = bias[c];
    const float* xp = x.data() + (t * B * C + p) * inner_;
    float* v = st->v.data() + p * inner_;
    float* count = st->count.empty() ? nullptr : st->count.data() + p * inner_;
    const float* a = nudge != 0.0f ? ann->data() + p * inner_ : nullptr;
    double sum = 0;
    for (int64_t i = 0; i < inner_; ++i) {
      float vi = v[i], ni = count ? count[i] : 0.0f;
      const float s = neuron::step(vi, ni, xp[i], b, theta, cfg);
      sum += s;
      if (a) vi -= nudge * (s - a[i]);
      if (commit) {
        v[i] = vi;
        if (count) count[i] = ni;
      }
    }
    plane_sum[size_t(p)] = sum;
  }
  for (int64_t p = 0; p < B * C; ++p) channel_sum[size_t(p % C)] += plane_sum[size_t(p)];
}

namespace {
const bool registered = kernels().add("neuron", [](const Layer& l, const std::vector<Shape>& in) {
  return std::make_unique<NeuronKernel>(static_cast<const NeuronLayer&>(l), in.at(0));
});
}  // namespace

}  // namespace snn::cpu
