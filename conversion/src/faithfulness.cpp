#include "snn/conversion/faithfulness.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "snn/cpu/kernel.hpp"
#include "snn/error.hpp"
#include "snn/layers/neuron.hpp"

namespace snn::conversion {

namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(3);
  os << v;
  return os.str();
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, double(std::fabs(t[i])));
  return m;
}

double max_abs_diff_d(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) return d;  // a NaN is the largest difference of all
    m = std::max(m, d);
  }
  return m;
}

// Fraction of elements of a quantised activation [K, C, ...] that differ by more than tolerance·θ_c.
double moved_fraction(const NeuronLayer& l, const Tensor& ours, const Tensor& ref, double tolerance) {
  const int64_t n = ref.dim(0), c = l.channels(), inner = n ? ref.numel() / (n * c) : 0;
  int64_t moved = 0;
  for (int64_t s = 0; s < n; ++s)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double limit = tolerance * double(l.theta(ch));
      const int64_t base = (s * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i)
        if (!(std::fabs(double(ours[base + i]) - double(ref[base + i])) <= limit)) ++moved;
    }
  return ref.numel() ? double(moved) / double(ref.numel()) : 0.0;
}

bool is_quantised(const Layer& l) {
  auto* n = dynamic_cast<const NeuronLayer*>(&l);
  return n && n->activation() == SourceActivation::QCFS;
}

}  // namespace

std::string FaithfulnessReport::failure() const {
  if (first_failure < 0) return "";
  const NodeFaithfulness& f = nodes[size_t(first_failure)];
  std::ostringstream os;
  os << "layer '" << f.name << "' (" << f.type << ") departs from " << reference;
  if (f.quantised)
    os << ": " << fmt(100.0 * f.moved_fraction) << " % of its quantised outputs moved by a level (at most "
       << fmt(100.0 * options.max_moved_fraction) << " % allowed)";
  else
    os << ": max |snnc - " << reference << "| = " << fmt(f.max_abs_diff) << ", " << fmt(f.rel_diff)
       << " of the layer's scale " << fmt(f.scale) << " (tolerance " << fmt(options.tolerance) << ")";
  os << ", computed from " << reference << "'s own inputs to the layer on " << layer_images << " check image(s)";
  return os.str();
}

std::string FaithfulnessReport::summary() const {
  std::ostringstream os;
  os << checked << " layers checked against " << reference << " on " << layer_images << " image(s)";
  if (unchecked) os << " (" << unchecked << " without a " << reference << " value)";
  os << ", worst relative error " << fmt(worst_rel_diff);
  if (!worst_layer.empty()) os << " at '" << worst_layer << "'";
  if (quantised_layers)
    os << "; quantised activations: " << fmt(100.0 * worst_moved_fraction) << " % moved a level per layer at most ("
       << fmt(100.0 * worst_drift_moved_fraction) << " % end to end)";
  if (output_images)
    os << "; logits on " << output_images << " image(s): max |diff| " << fmt(output_max_abs_diff) << " ("
       << fmt(output_rel_diff) << " relative), argmax agrees on " << argmax_agree << "/" << output_images;
  return os.str();
}

FaithfulnessReport check_layers(const Network& net_in, const Tensor& inputs, const std::vector<Tensor>& references,
                                Backend& backend, const FaithfulnessOptions& options) {
  require(options.tolerance >= 0 && options.max_moved_fraction >= 0, "faithfulness tolerances must be >= 0");
  Network net = net_in;
  net.set_preprocessing({});
  FaithfulnessReport r;
  r.options = options;
  r.layer_images = inputs.rank() ? inputs.dim(0) : 0;
  // The whole ANN view, for the drift figures.
  std::vector<Tensor> ann;
  backend.forward_ann(net, inputs, &ann);

  for (int i = 0; i < net.size(); ++i) {
    const Layer& layer = net.layer(i);
    NodeFaithfulness f;
    f.node = i;
    f.name = layer.name();
    f.type = layer.type();
    f.quantised = is_quantised(layer);
    const Tensor* ref = size_t(i) < references.size() && !references[size_t(i)].empty() ? &references[size_t(i)] : nullptr;
    std::vector<const Tensor*> ins;
    for (int j : net.inputs(i)) {
      if (j == Network::kInput) ins.push_back(&inputs);
      else if (size_t(j) < references.size() && !references[size_t(j)].empty()) ins.push_back(&references[size_t(j)]);
      else ins.push_back(nullptr);
    }
    if (!ref || std::find(ins.begin(), ins.end(), nullptr) != ins.end()) {
      ++r.unchecked;
      r.nodes.push_back(f);
      continue;
    }
    Tensor out;
    cpu::make_kernel(layer, net.input_shapes(i))->forward(ins, out);
    require(out.numel() == ref->numel(), "faithfulness check: layer '" + layer.name() + "' gives " +
                                             to_string(out.shape()) + ", the reference " + to_string(ref->shape()));
    f.checked = true;
    ++r.checked;
    f.scale = max_abs(*ref);
    f.max_abs_diff = max_abs_diff_d(out, *ref);
    f.rel_diff = f.max_abs_diff / std::max(f.scale, 1e-30);
    const Tensor& whole = ann[size_t(i)];
    f.drift_rel = max_abs_diff_d(whole, *ref) / std::max(f.scale, 1e-30);
    if (f.quantised) {
      const auto& n = static_cast<const NeuronLayer&>(layer);
      ++r.quantised_layers;
      f.moved_fraction = moved_fraction(n, out, *ref, options.tolerance);
      f.drift_moved_fraction = moved_fraction(n, whole, *ref, options.tolerance);
      f.passed = f.moved_fraction <= options.max_moved_fraction;
      r.worst_moved_fraction = std::max(r.worst_moved_fraction, f.moved_fraction);
      r.worst_drift_moved_fraction = std::max(r.worst_drift_moved_fraction, f.drift_moved_fraction);
    } else {
      // An all-zero reference (a dead layer) must be matched exactly up to rounding of tiny values.
      f.passed = f.scale > 0 ? f.rel_diff <= options.tolerance : f.max_abs_diff <= 1e-30;
      if (!(f.rel_diff <= r.worst_rel_diff)) {
        r.worst_rel_diff = f.rel_diff;
        r.worst_layer = f.name;
      }
    }
    if (!f.passed && r.first_failure < 0) r.first_failure = int(r.nodes.size());
    r.nodes.push_back(f);
  }
  return r;
}

void compare_outputs(const Network& net_in, const Tensor& inputs, const Tensor& reference, Backend& backend,
                     FaithfulnessReport& report) {
  Network net = net_in;
  net.set_preprocessing({});
  const Tensor ours = backend.forward_ann(net, inputs);
  require(ours.shape() == reference.shape(), "the ANN view gives outputs " + to_string(ours.shape()) +
                                                 ", the reference " + to_string(reference.shape()));
  report.output_images = ours.dim(0);
  report.output_max_abs_diff = max_abs_diff_d(ours, reference);
  report.output_rel_diff = report.output_max_abs_diff / std::max(max_abs(reference), 1e-30);
  const int64_t n = ours.dim(0), k = ours.numel() / std::max<int64_t>(1, n);
  report.argmax_agree = 0;
  for (int64_t s = 0; s < n; ++s) {
    const float* a = ours.data() + s * k;
    const float* b = reference.data() + s * k;
    report.argmax_agree += (std::max_element(a, a + k) - a) == (std::max_element(b, b + k) - b);
  }
}

}  // namespace snn::conversion
