// Runs of elementwise ops (lowering.hpp): kept as an ElementwiseFunction of their root activation until
// a layer reads them, then recognised (elementwise.hpp) and made into nothing (identity), a fold into
// the conv/linear before them or a per-channel affine layer (affine maps), or a neuron layer (ReLU,
// clip, QCFS). The sum of two different activations is a residual Add.
#include <cmath>
#include <limits>

#include "lowering.hpp"
#include "snn/error.hpp"
#include "snn/layers/all.hpp"

namespace snn::conversion::detail {

namespace {

using EOp = ElementwiseFunction::Op;
constexpr double kInf = std::numeric_limits<double>::infinity();

bool binary_op(const std::string& k, EOp* op) {
  static const std::map<std::string, EOp> ops = {{"add", EOp::Add}, {"sub", EOp::Sub},     {"mul", EOp::Mul},
                                                 {"div", EOp::Div}, {"maximum", EOp::Max}, {"minimum", EOp::Min}};
  auto it = ops.find(k);
  if (it == ops.end()) return false;
  *op = it->second;
  return true;
}

bool unary_op(const std::string& k, EOp* op) {
  static const std::map<std::string, EOp> ops = {
      {"floor", EOp::Floor}, {"ceil", EOp::Ceil}, {"round", EOp::Round}, {"neg", EOp::Neg}};
  auto it = ops.find(k);
  if (it == ops.end()) return false;
  *op = it->second;
  return true;
}

}  // namespace

bool Lowering::elementwise(const OpNode& n) {
  EOp op = EOp::Input;
  const bool binary = binary_op(n.op, &op), unary = !binary && unary_op(n.op, &op);
  if (!binary && !unary && n.op != "relu" && n.op != "clamp") return false;
  const int origin = int(&n - nodes_.data());
  if (!binary) {
    Val x = pending(n, 0);
    ElementwiseFunction& f = *x.fn;
    if (unary) x.term = f.unary(op, x.term);
    else if (n.op == "relu") x.term = f.binary(EOp::Max, x.term, f.constant({0.0}));
    else x.term = f.clamp(x.term, n.get_float("min", -kInf), n.get_float("max", kInf));
    x.origin = origin;
    term_values_[{x.fn.get(), x.term}] = n.outputs[0];
    set(n, 0, x);
    return true;
  }
  const bool ca = is_const(n, 0), cb = is_const(n, 1);
  if (ca && cb) fail(n, "arithmetic on constants only (the reader should have folded it)");
  if (!ca && !cb) {
    Val a = pending(n, 0), b = pending(n, 1);
    if (a.node != b.node) {
      if (n.op == "add") {
        residual_add(n);
        return true;
      }
      fail(n, n.op + " of two different activations", "supported are sums of activations (residuals)");
    }
    const int tb = a.fn->merge(*b.fn, b.term);
    a.term = a.fn->binary(op, a.term, tb);
    a.origin = origin;
    term_values_[{a.fn.get(), a.term}] = n.outputs[0];
    set(n, 0, a);
    return true;
  }
  const size_t act = ca ? 1 : 0, con = ca ? 0 : 1;
  Val x = pending(n, act);
  const int64_t channels = net_.output_shape(x.node).empty() ? 1 : net_.output_shape(x.node)[0];
  const int c = x.fn->constant(per_channel(n, con, channels, x));
  x.term = ca ? x.fn->binary(op, c, x.term) : x.fn->binary(op, x.term, c);
  x.origin = origin;
  term_values_[{x.fn.get(), x.term}] = n.outputs[0];
  set(n, 0, x);
  return true;
}

Lowering::Val Lowering::pending(const OpNode& n, size_t i) {
  const Val& v = in(n, i);
  if (v.kind == Val::Kind::Pending) return v;
  Val p;
  p.kind = Val::Kind::Pending;
  p.node = node_of(n, i, "the activation");
  p.fn = std::make_shared<ElementwiseFunction>();
  p.term = 0;
  p.root_value = v.kind == Val::Kind::Node ? n.inputs[i] : -1;
  return p;
}

// A constant operand: one value, or one per channel ([C, 1, 1] / [1, C, 1, 1] for [N, C, H, W]; [C] for [N, C]).
std::vector<double> Lowering::per_channel(const OpNode& n, size_t i, int64_t channels, const Val& act) {
  const OpConstant& c = constant(n, i, "the constant operand");
  const snn::Tensor t = c.tensor();
  std::vector<double> values(t.values().begin(), t.values().end());
  if (values.size() == 1) return values;
  const int r = int(net_.output_shape(act.node).size()) + 1;
  snn::Shape s = c.shape;
  while (int(s.size()) < r) s.insert(s.begin(), 1);
  snn::Shape want(size_t(r), 1);
  if (r >= 2) want[1] = channels;
  if (s != want)
    fail(n, "an operand of shape " + snn::to_string(c.shape) + " is not one value nor one per channel of the " +
                snn::to_string(net_.output_shape(act.node)) + " activation");
  return values;
}

void Lowering::residual_add(const OpNode& n) {
  const int a = node_of(n, 0, "the first summand"), b = node_of(n, 1, "the second summand");
  set(n, 0, node_val(add_layer(n, std::make_unique<snn::Add>(layer_name(n, "add")), {a, b}, n.outputs[0])));
}

int Lowering::function_output(const OpNode& reader, int value, const Val& v) {
  const OpNode& n = v.origin >= 0 ? nodes_[size_t(v.origin)] : reader;
  const snn::Shape s = net_.output_shape(v.node);
  const int64_t channels = s.empty() ? 1 : s[0];
  if (v.fn->channels() != 1 && v.fn->channels() != channels)
    fail(n, "per-channel constants of " + std::to_string(v.fn->channels()) + " values on " + std::to_string(channels) + " channels");
  const ActivationFit fit = fit_activation(*v.fn, v.term, channels);
  using Kind = ActivationFit::Kind;
  switch (fit.kind) {
    case Kind::Identity: return v.node;
    case Kind::Affine: return fold_affine(n, value, v, fit.scale, fit.shift);
    case Kind::Unknown:
      fail(n, "the elementwise ops (" + v.fn->describe(v.term) + ") compute no activation a spiking neuron can stand for: " + fit.why,
           "supported are ReLU, ReLU6/clamp(0, θ), QCFS (θ·floor(clamp(x/θ, 0, 1)·L + 0.5)/L) and per-channel affine "
           "maps; an IF neuron's rate is a clipped ReLU, so replace other activations and retrain");
    default: break;
  }
  int affine_value = -1;
  if (auto it = term_values_.find({v.fn.get(), fit.affine_term}); it != term_values_.end()) affine_value = it->second;
  const int x = fit.has_affine() ? fold_affine(n, affine_value, v, fit.scale, fit.shift) : v.node;
  const std::string kind = fit.kind == Kind::ReLU ? "relu" : fit.kind == Kind::Clip ? "clip" : "qcfs";
  const int node = neuron(n, x, fit, layer_name(n, kind));
  bind(node, value);
  return node;
}

// scale·x + shift per channel: folded into the conv/linear before it when it is that layer's only
// reader; else a per-channel affine layer. `value` is the graph value it equals (-1: none).
int Lowering::fold_affine(const OpNode& n, int value, const Val& v, const std::vector<float>& scale,
                          const std::vector<float>& shift) {
  if (snn::Layer* l = foldable(node_val(v.node), v.root_value)) {
    auto* conv = dynamic_cast<snn::Conv2d*>(l);
    snn::Tensor& w = conv ? conv->weight() : static_cast<snn::Linear*>(l)->weight();
    snn::Tensor& b = conv ? conv->bias() : static_cast<snn::Linear*>(l)->bias();
    const int64_t out = w.dim(0), per = w.numel() / out;
    if (b.empty()) b = snn::Tensor({out}, 0.0f);
    for (int64_t o = 0; o < out; ++o) {
      const float a = scale[size_t(o)];
      for (int64_t k = 0; k < per; ++k) w[o * per + k] *= a;
      b[o] = b[o] * a + shift[size_t(o)];
    }
    report_->notes.push_back("elementwise scale/shift after '" + l->name() + "' folded into it");
    bind(v.node, value);
    return v.node;
  }
  const int64_t c = int64_t(scale.size());
  auto layer = std::make_unique<snn::ChannelAffine>(layer_name(n, "affine"), snn::Tensor({c}, scale), snn::Tensor({c}, shift));
  return add_layer(n, std::move(layer), {v.node}, value);
}

int Lowering::neuron(const OpNode& n, int node, const ActivationFit& fit, const std::string& name) {
  const snn::Shape s = net_.output_shape(node);
  const int64_t channels = s.empty() ? 1 : s[0];
  using Kind = ActivationFit::Kind;
  const snn::SourceActivation act = fit.kind == Kind::ReLU   ? snn::SourceActivation::ReLU
                                    : fit.kind == Kind::Clip ? snn::SourceActivation::Clip
                                                             : snn::SourceActivation::QCFS;
  std::vector<float> theta = fit.kind == Kind::ReLU ? std::vector<float>{1.0f} : fit.theta;
  auto layer = std::make_unique<snn::NeuronLayer>(name, channels, std::move(theta), act, fit.levels, opts_.neuron);
  ++report_->activations;
  if (fit.kind == Kind::ReLU) ++report_->relu_layers;
  if (fit.kind == Kind::QCFS)
    report_->notes.push_back("'" + name + "'" + (n.scope_class.empty() ? "" : " (" + n.scope_class + ")") +
                             ": QCFS activation, L = " + std::to_string(fit.levels) + ", theta = " +
                             (fit.theta.size() == 1 ? std::to_string(fit.theta[0]) : std::to_string(fit.theta.size()) + " per-channel values"));
  return add_layer(n, std::move(layer), {node}, -1);
}

}  // namespace snn::conversion::detail
