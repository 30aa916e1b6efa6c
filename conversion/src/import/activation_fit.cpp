// fit_activation: what an elementwise function of one activation computes (see elementwise.hpp).
//
// Evaluated in double on probes spread over many magnitudes (thresholds of 0.01 and of 100 both occur),
// so the spelling and the float order of the exporter's ops do not matter. QCFS is recognised by its
// levels: the distinct values on a dense grid over [0, θ], then checked against θ·floor(x·L/θ + 0.5)/L
// everywhere but within a hair of a step edge.
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "elementwise.hpp"

namespace snn::conversion::detail {

namespace {

using Kind = ActivationFit::Kind;
using Fn = std::function<double(double)>;

constexpr int kMaxLevels = 2048;

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

const std::vector<double>& probes() {
  static const std::vector<double> p = {1e-6, 1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3, 0.7, 1, 2.5, 3, 10, 30, 100, 1e3, 1e4, 1e6};
  return p;
}

bool near(double a, double b, double rel) { return std::fabs(a - b) <= rel * (std::fabs(a) + std::fabs(b)) + 1e-12; }

// One channel's fit, without a leading affine map.
struct ChannelFit {
  Kind kind = Kind::Unknown;
  double a = 1, b = 0, theta = 0;
  int levels = 0;
  std::string why;
};

bool fits(const Fn& g, const Fn& want, double lo, double hi, int points) {
  for (int i = 0; i <= points; ++i) {
    const double x = lo + (hi - lo) * (i + 0.37) / (points + 1);
    if (!near(g(x), want(x), 1e-6)) return false;
  }
  return true;
}

ChannelFit fit_linear(const Fn& g) {
  ChannelFit f;
  f.b = g(0.0);
  f.a = g(1.0) - f.b;
  for (double p : probes())
    for (double x : {p, -p})
      if (!near(g(x), f.a * x + f.b, 1e-6)) return f;
  f.kind = (f.a == 1.0 && f.b == 0.0) ? Kind::Identity : Kind::Affine;
  return f;
}

// Levels of a bounded, zero-below-zero g on [0, θ]: L when g is QCFS(θ, L), else 0.
int qcfs_levels(const Fn& g, double theta) {
  const int grid = 16 * kMaxLevels;
  std::vector<double> values;
  for (int i = 0; i <= grid; ++i) values.push_back(g(theta * (i + 0.5) / grid));
  std::sort(values.begin(), values.end());
  int distinct = 1;
  for (size_t i = 1; i < values.size(); ++i) distinct += near(values[i - 1], values[i], 1e-9) ? 0 : 1;
  if (distinct > kMaxLevels + 1) return 0;
  const int levels = distinct - 1;
  if (levels < 1) return 0;
  for (int i = 0; i <= grid; ++i) {
    const double x = theta * (i + 0.5) / grid, y = x / theta * levels + 0.5;
    if (std::fabs(y - std::round(y)) < 1e-6) continue;  // a step edge: either side is right
    const double want = theta * std::floor(std::min(std::max(x / theta, 0.0), 1.0) * levels + 0.5) / levels;
    if (!near(g(x), want, 1e-6)) return 0;
  }
  return levels;
}

ChannelFit fit_channel(const Fn& g) {
  ChannelFit f = fit_linear(g);
  if (f.kind != Kind::Unknown) return f;
  for (double p : probes())
    if (std::fabs(g(-p)) > 1e-12) {
      f.why = "f(" + num(-p) + ") = " + num(g(-p)) + ", not 0 below 0 (a spiking neuron stands for an activation that is 0 below 0)";
      return f;
    }
  const double top = g(1e12);
  if (top >= 1e11) {
    f.kind = fits(g, [](double x) { return x; }, 0.0, 1e4, 64) ? Kind::ReLU : Kind::Unknown;
    if (f.kind == Kind::Unknown) f.why = "unbounded above but not the identity above 0 (f(1) = " + num(g(1)) + ")";
    return f;
  }
  if (!(top > 0)) {
    f.why = "its largest value is " + num(top) + ", not positive";
    return f;
  }
  f.theta = top;
  if (fits(g, [&](double x) { return std::min(x, top); }, 0.0, 2 * top, 256)) {
    f.kind = Kind::Clip;
    return f;
  }
  f.levels = qcfs_levels(g, top);
  f.kind = f.levels > 0 ? Kind::QCFS : Kind::Unknown;
  if (f.kind == Kind::Unknown)
    f.why = "bounded by " + num(top) + " but neither clip(0, " + num(top) + ") nor QCFS steps (floor(x·L/θ + 0.5)/L·θ)";
  return f;
}

// Combines per-channel fits: every channel must be the same kind (and L).
ActivationFit combine(const std::vector<ChannelFit>& fits_per_channel) {
  ActivationFit r;
  const ChannelFit& f0 = fits_per_channel.front();
  for (const ChannelFit& f : fits_per_channel)
    if (f.kind != f0.kind || f.levels != f0.levels) {
      r.kind = Kind::Unknown;
      r.why = f.kind == Kind::Unknown ? f.why : "channels compute different functions";
      return r;
    }
  r.kind = f0.kind;
  r.levels = f0.levels;
  r.why = f0.why;
  if (r.kind == Kind::Affine)
    for (const ChannelFit& f : fits_per_channel) {
      r.scale.push_back(float(f.a));
      r.shift.push_back(float(f.b));
    }
  if (r.kind == Kind::Clip || r.kind == Kind::QCFS) {
    for (const ChannelFit& f : fits_per_channel) r.theta.push_back(float(f.theta));
    if (std::all_of(r.theta.begin(), r.theta.end(), [&](float t) { return t == r.theta[0]; })) r.theta.resize(1);
  }
  return r;
}

}  // namespace

ActivationFit fit_activation(const ElementwiseFunction& f, int out, int64_t channels) {
  // Without per-channel constants every channel computes the same function: fit one.
  if (f.channels() == 1 && channels > 1) {
    ActivationFit one = fit_activation(f, out, 1);
    if (one.has_affine()) {
      one.scale.assign(size_t(channels), one.scale[0]);
      one.shift.assign(size_t(channels), one.shift[0]);
    }
    return one;
  }
  std::vector<ChannelFit> direct;
  for (int64_t c = 0; c < channels; ++c) direct.push_back(fit_channel([&](double x) { return f.eval(out, x, c); }));
  ActivationFit r = combine(direct);
  if (r.kind != Kind::Unknown) return r;
  // f = h(a·x + b): an activation of an affine map (a decomposed batch norm, then ReLU).
  const int u = f.affine_boundary(out);
  if (u < 0) return r;
  std::vector<ChannelFit> outer;
  for (int64_t c = 0; c < channels; ++c)
    outer.push_back(fit_channel([&](double v) { return f.eval(out, 0.0, c, u, v); }));
  ActivationFit h = combine(outer);
  if (h.kind != Kind::ReLU && h.kind != Kind::Clip && h.kind != Kind::QCFS) return r;
  h.affine_term = u;
  for (int64_t c = 0; c < channels; ++c) {
    const double b = f.eval(u, 0.0, c), a = f.eval(u, 1.0, c) - b;
    h.scale.push_back(float(a));
    h.shift.push_back(float(b));
  }
  return h;
}

}  // namespace snn::conversion::detail
