#include "snn/nir_params.hpp"

#include <cfloat>
#include <cmath>
#include <tuple>

#include "snn/error.hpp"

namespace snn {

namespace {

const NirValue* find(const NirNodeData& n, const std::string& key) {
  const auto it = n.params.find(key);
  return it == n.params.end() ? nullptr : &it->second;
}

const NirValue& param(const NirNodeData& n, const std::string& key, const std::string& where) {
  const NirValue* v = find(n, key);
  require(v != nullptr, where + ": parameter '" + key + "' is missing");
  require(!v->is_string, where + ": parameter '" + key + "' is a string ('" + v->text + "'), not numbers");
  return *v;
}

std::vector<double> numbers(const NirValue& v) {
  return v.is_integer ? std::vector<double>(v.ints.begin(), v.ints.end()) : std::vector<double>(v.floats.begin(), v.floats.end());
}

// Whole numbers in [lo, 2^31).
std::vector<int64_t> whole(const NirValue& v, const std::string& key, const std::string& where, int64_t lo) {
  std::vector<int64_t> out;
  for (double x : numbers(v)) {
    require(std::isfinite(x) && x == std::floor(x) && x >= double(lo) && x < 2147483648.0,
            where + ": '" + key + "' holds " + std::to_string(x) + ", not a whole number >= " + std::to_string(lo));
    out.push_back(int64_t(x));
  }
  return out;
}

// One number or a (height, width) pair; `fallback` when absent.
std::pair<int64_t, int64_t> pair_of(const NirNodeData& n, const std::string& key, const std::string& where, int64_t lo,
                                    std::pair<int64_t, int64_t> fallback) {
  if (!find(n, key)) return fallback;
  const std::vector<int64_t> v = whole(param(n, key, where), key, where, lo);
  require(v.size() == 1 || v.size() == 2, where + ": '" + key + "' must be one number or a pair, got " +
                                              std::to_string(v.size()) + " values");
  return {v[0], v.back()};
}

// Conv2d padding: numbers, or PyTorch's "valid" / "same" (stride 1, odd kernels: symmetric).
std::pair<int64_t, int64_t> conv_padding(const NirNodeData& n, const Conv2dSpec& s, const std::string& where) {
  const NirValue* v = find(n, "padding");
  if (!v || !v->is_string) return pair_of(n, "padding", where, 0, {0, 0});
  if (v->text == "valid") return {0, 0};
  require(v->text == "same" && s.stride_h == 1 && s.stride_w == 1 && s.kernel_h % 2 == 1 && s.kernel_w % 2 == 1,
          where + ": padding '" + v->text + "' is supported as 'valid', or 'same' with stride 1 and odd kernels");
  return {s.kernel_h / 2, s.kernel_w / 2};
}

}  // namespace

Shape nir_shape(const NirNodeData& n, const std::string& key, const std::string& where) {
  const NirValue& v = param(n, key, where);
  require(v.shape.size() <= 1, where + ": '" + key + "' must be a list of sizes, got an array of shape " + to_string(v.shape));
  Shape s = whole(v, key, where, 1);
  numel_of(s);  // refuses sizes beyond 2^40 elements
  return s;
}

Tensor nir_tensor(const NirNodeData& n, const std::string& key, const std::string& where) {
  const NirValue& v = param(n, key, where);
  std::vector<float> f = v.is_integer ? std::vector<float>(v.ints.begin(), v.ints.end()) : v.floats;
  for (size_t k = 0; k < f.size(); ++k)
    require(std::isfinite(f[k]), where + ": '" + key + "' element " + std::to_string(k) + " is " + std::to_string(f[k]));
  return Tensor(v.shape, std::move(f));
}

Preprocessing nir_normalisation(const NirNodeData& n, const Shape& input_shape, const std::string& where) {
  Preprocessing p;
  const auto mean = n.metadata.find("normalise_mean"), std = n.metadata.find("normalise_std");
  if (mean == n.metadata.end() && std == n.metadata.end()) return p;
  require(mean != n.metadata.end() && std != n.metadata.end() && !mean->second.is_string && !std->second.is_string,
          where + ": metadata needs both normalise_mean and normalise_std (numbers)");
  for (double m : numbers(mean->second)) p.mean.push_back(float(m));
  for (double s : numbers(std->second)) p.std.push_back(float(s));
  require(int64_t(p.mean.size()) == input_shape[0] && p.std.size() == p.mean.size(),
          where + ": normalise_mean/std need one value per input channel (" + std::to_string(input_shape[0]) + ")");
  for (size_t c = 0; c < p.std.size(); ++c)
    require(std::isfinite(p.mean[c]) && std::isfinite(p.std[c]) && p.std[c] > 0,
            where + ": normalise_std must be positive and both finite (channel " + std::to_string(c) + ")");
  return p;
}

std::vector<float> nir_per_channel(const NirNodeData& n, const std::string& key, const Shape& shape,
                                   const std::string& where) {
  const std::vector<double> v = numbers(param(n, key, where));
  const int64_t channels = shape[0], total = numel_of(shape), inner = total / channels;
  std::vector<float> out;
  if (v.size() == 1) out.assign(size_t(channels), float(v[0]));
  else if (int64_t(v.size()) == channels) out.assign(v.begin(), v.end());
  require(!out.empty() || int64_t(v.size()) == total,
          where + ": '" + key + "' has " + std::to_string(v.size()) + " values; its input " + to_string(shape) +
              " takes one, one per channel, or one per element");
  if (out.empty())
    for (int64_t c = 0; c < channels; ++c) out.push_back(float(v[size_t(c * inner)]));
  for (int64_t k = 0; int64_t(v.size()) == total && k < total; ++k)
    require(float(v[size_t(k)]) == out[size_t(k / inner)],
            where + ": '" + key + "' varies within channel " + std::to_string(k / inner) + " (" +
                std::to_string(out[size_t(k / inner)]) + " vs " + std::to_string(v[size_t(k)]) +
                "); snnc's neurons and layers share parameters per channel");
  for (float x : out) require(std::isfinite(x), where + ": '" + key + "' holds " + std::to_string(x));
  return out;
}

NirConv nir_conv2d(const NirNodeData& n, const Shape& input, const std::string& where) {
  NirConv c;
  c.weight = nir_tensor(n, "weight", where);
  require(c.weight.rank() == 4, where + ": weight must be [out, in/groups, kh, kw], got " + to_string(c.weight.shape()));
  Conv2dSpec& s = c.spec;
  s.groups = find(n, "groups") ? whole(param(n, "groups", where), "groups", where, 1).at(0) : 1;
  s.out_channels = c.weight.dim(0);
  s.in_channels = c.weight.dim(1) * s.groups;
  require(s.in_channels == input[0] && s.out_channels % s.groups == 0,
          where + ": weight " + to_string(c.weight.shape()) + " with " + std::to_string(s.groups) +
              " groups does not take an input of " + to_string(input));
  s.kernel_h = c.weight.dim(2);
  s.kernel_w = c.weight.dim(3);
  std::tie(s.stride_h, s.stride_w) = pair_of(n, "stride", where, 1, {1, 1});
  const auto dilation = pair_of(n, "dilation", where, 1, {1, 1});
  require(dilation.first == 1 && dilation.second == 1, where + ": dilation other than 1 has no snnc layer");
  std::tie(s.pad_h, s.pad_w) = conv_padding(n, s, where);
  if (find(n, "bias")) {
    c.bias = nir_tensor(n, "bias", where);
    require(c.bias.numel() == s.out_channels, where + ": bias has " + std::to_string(c.bias.numel()) + " values for " +
                                                  std::to_string(s.out_channels) + " output channels");
    c.bias = Tensor({s.out_channels}, c.bias.values());
  }
  if (const NirValue* hw = find(n, "input_shape"); hw && hw->size() == 2) {
    const std::vector<int64_t> v = whole(*hw, "input_shape", where, 0);
    require(v[0] == input[1] && v[1] == input[2], where + ": input_shape (" + std::to_string(v[0]) + ", " +
                                                      std::to_string(v[1]) + ") but its input is " + to_string(input));
  }
  return c;
}

PoolSpec nir_pool(const NirNodeData& n, const std::string& where) {
  PoolSpec s;
  std::tie(s.kernel_h, s.kernel_w) = pair_of(n, "kernel_size", where, 1, {0, 0});
  require(s.kernel_h > 0, where + ": parameter 'kernel_size' is missing");
  std::tie(s.stride_h, s.stride_w) = pair_of(n, "stride", where, 1, {s.kernel_h, s.kernel_w});
  std::tie(s.pad_h, s.pad_w) = pair_of(n, "padding", where, 0, {0, 0});
  s.ceil_mode = false;
  s.count_include_pad = true;
  return s;
}

void nir_check_flatten(const NirNodeData& n, const Shape& input, const std::string& where) {
  const int64_t rank = int64_t(input.size());
  auto dim = [&](const std::string& key, int64_t fallback) {
    if (!find(n, key)) return fallback;
    const std::vector<int64_t> v = whole(param(n, key, where), key, where, -rank);
    require(v.size() == 1, where + ": '" + key + "' must be one number");
    return v[0] < 0 ? v[0] + rank : v[0];
  };
  const int64_t start = dim("start_dim", 0), end = dim("end_dim", -1 + rank);
  require(start == 0 && end == rank - 1, where + ": flattens dimensions " + std::to_string(start) + ".." +
                                             std::to_string(end) + " of " + to_string(input) +
                                             "; snnc flattens a whole C×H×W value (start_dim 0, end_dim -1)");
}

NirNeuron nir_neuron(const NirNodeData& n, const Shape& shape, double dt, const std::string& where) {
  NirNeuron out;
  out.leaky = n.type == "LIF";
  out.theta = nir_per_channel(n, "v_threshold", shape, where);
  for (float t : out.theta)
    require(t > 0, where + ": v_threshold " + std::to_string(t) + " is not positive (snnc's thresholds are)");
  if (find(n, "v_reset"))
    for (float r : nir_per_channel(n, "v_reset", shape, where))
      require(r == 0, where + ": v_reset = " + std::to_string(r) + "; snnc's neurons reset to 0 (v_reset = 0 only)");
  const std::vector<float> r = nir_per_channel(n, "r", shape, where);
  if (!out.leaky) {  // NIR's IF is dv/dt = r·I: v ← v + dt·r·I (Norse and Sinabs write r = 1, SpikingJelly 1/dt)
    for (float rc : r) {
      const double g = dt * double(rc);
      out.gain.push_back(std::fabs(g - 1.0) <= 4 * double(FLT_EPSILON) ? 1.0 : g);  // 1 within float32 rounding
    }
    return out;
  }
  const std::vector<float> tau = nir_per_channel(n, "tau", shape, where);
  const std::vector<float> leak = nir_per_channel(n, "v_leak", shape, where);
  bool leaks = false;
  for (size_t c = 0; c < tau.size(); ++c) {
    const double k = dt / double(tau[c]);  // Euler: v ← (1 − dt/τ)·v + dt/τ·(v_leak + r·I)
    require(std::isfinite(k) && k > 0 && k <= 1,
            where + ": dt/τ = " + std::to_string(dt) + "/" + std::to_string(tau[c]) + " = " + std::to_string(k) +
                " is outside (0, 1]: pass the writer's step with --dt (snnTorch writes τ for dt = 1e-4, Norse's "
                "LIFBox for an effective 1e-6, snnc for 1)");
    const float beta = float(1.0 - k);
    require(c == 0 || beta == out.beta, where + ": leak β = 1 − dt/τ differs between channels (" +
                                            std::to_string(out.beta) + ", " + std::to_string(beta) +
                                            "); snnc's LIF layers share one β");
    out.beta = beta;
    const double g = k * double(r[c]);
    out.gain.push_back(std::fabs(g - 1.0) <= 4 * double(FLT_EPSILON) ? 1.0 : g);  // 1 within float32 rounding
    out.bias.push_back(float(-k * double(leak[c])));
    leaks = leaks || leak[c] != 0;
  }
  if (!leaks) out.bias.clear();
  return out;
}

}  // namespace snn
