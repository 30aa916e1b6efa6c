#include "snn/nir_import.hpp"

#include <cmath>
#include <map>
#include <set>

#include "snn/error.hpp"
#include "snn/layers/all.hpp"
#include "snn/nir_graph.hpp"
#include "snn/nir_order.hpp"
#include "snn/nir_params.hpp"

namespace snn {

namespace {

bool is_one(double x) { return std::fabs(x - 1.0) <= 1e-12; }

// A NIR node's output in snnc terms: an snnc node times a per-channel factor still owed (dim 0 of the
// value's shape: channels of [C,H,W], features of [N]). `foldable`: a conv/linear node read only here.
struct Value {
  int node = Network::kInput;
  std::vector<double> factor;  // empty: none
  int foldable = -2;
};

class Importer {
 public:
  Importer(const NirGraphData& g, const std::string& path, const NirImportOptions& o, NirImportReport& r)
      : g_(g), path_(path), o_(o), report_(r), order_(nir_feed_forward_order(g, path)) {}

  Network build() {
    values_.resize(g_.nodes.size());
    for (int i : order_.nodes) add_node(i);
    net_.validate();
    return std::move(net_);
  }

 private:
  std::string where(int i) const { return nir_where(path_, g_.nodes[size_t(i)]); }
  const NirNodeData& node(int i) const { return g_.nodes[size_t(i)]; }
  Shape shape_of(const Value& v) const { return net_.output_shape(v.node); }

  void add_node(int i) {
    const std::string& type = node(i).type;
    if (type == "Input") return add_input(i);
    Value in = gather(i);
    Value& out = values_[size_t(i)];
    if (type == "Output") return add_output(i, in);
    if (type == "Conv2d") out = add_conv(i, in);
    else if (type == "Affine" || type == "Linear") out = add_linear(i, in);
    else if (type == "IF" || type == "LIF") out = add_neuron(i, in);
    else if (type == "Scale") out = add_scale(i, in);
    else if (type == "AvgPool2d" || type == "SumPool2d") out = add_pool(i, in);
    else if (type == "Flatten") out = add_flatten(i, in);
    else throw Error(where(i) + ": unexpected node type");  // nir_order refuses these first
  }

  std::string unique_name(const std::string& base) const {
    std::string name = base;
    for (int k = 2; net_.find(name) != -2; ++k) name = base + "." + std::to_string(k);
    return name;
  }

  void note(int i, const std::string& what) { report_.notes.push_back("'" + node(i).name + "': " + what); }

  // --- input and readout ----------------------------------------------------------------------------
  void add_input(int i) {
    Shape shape = nir_shape(node(i), "shape", where(i));
    if ((shape.size() == 2 || shape.size() == 4) && shape[0] == 1) shape.erase(shape.begin());  // a batch of 1
    const bool flat = shape.size() == 1 && !o_.input_shape.empty();
    require(shape.size() == 3 || flat || shape.size() == 1,
            where(i) + ": input shape " + to_string(shape) + " is neither C×H×W nor flat");
    if (flat)
      require(numel_of(o_.input_shape) == shape[0], where(i) + ": flat input of " + std::to_string(shape[0]) +
                                                        " values cannot take images of shape " + to_string(o_.input_shape));
    net_.set_input_shape(flat ? o_.input_shape : shape);
    net_.set_preprocessing(nir_normalisation(node(i), net_.input_shape(), where(i)));
    if (flat) {
      net_.emplace<Flatten>({Network::kInput}, unique_name(node(i).name + ".flatten"));
      values_[size_t(i)].node = net_.size() - 1;
      note(i, "images of shape " + to_string(o_.input_shape) + " flattened to the graph's input");
    }
  }

  void add_output(int i, Value in) {
    require(in.node != Network::kInput, where(i) + ": the graph has no layers between Input and Output");
    if (node(i).params.count("shape")) {
      Shape want = nir_shape(node(i), "shape", where(i));
      require(numel_of(want) == numel_of(shape_of(in)) || (want.size() == 2 && want[0] == 1 && want[1] == numel_of(shape_of(in))),
              where(i) + ": declares shape " + to_string(want) + " but its input is " + to_string(shape_of(in)));
    }
    const std::string name = unique_name(node(i).name);
    if (!in.factor.empty()) {  // the readout applies what the value still owes (e.g. 1/θ of spikes)
      apply_factor(in, name);
      note(i, "readout: channel_affine '" + name + "' scales the last node's output");
    } else if (net_.layer(in.node).stateful()) {  // the readout sums the last neuron's 0/1 spikes over t
      net_.emplace<Flatten>({in.node}, name);
      note(i, "readout: the spike counts of '" + net_.layer(in.node).name() + "' (an identity layer, flatten)");
    }
  }

  // --- sums, factors --------------------------------------------------------------------------------
  // The sum of node i's incoming values (several edges: residual adds).
  Value gather(int i) {
    const std::vector<int>& preds = order_.preds[size_t(i)];
    if (preds.size() == 1) return values_[size_t(preds[0])];
    int sum = -2;
    for (size_t k = 0; k < preds.size(); ++k) {
      Value v = values_[size_t(preds[k])];
      const int term = v.factor.empty() ? v.node : apply_factor(v, unique_name(node(i).name + ".in" + std::to_string(k)));
      if (sum == -2) { sum = term; continue; }
      const Shape a = net_.output_shape(sum), b = net_.output_shape(term);
      require(a == b, where(i) + ": its inputs' shapes " + to_string(a) + " and " + to_string(b) + " cannot be summed");
      net_.emplace<Add>({sum, term}, unique_name(node(i).name + ".sum"));
      sum = net_.size() - 1;
    }
    return Value{sum, {}, -2};
  }

  // A channel_affine layer scaling v by its factor; returns its index.
  int apply_factor(const Value& v, const std::string& name) {
    const int64_t c = shape_of(v)[0];
    std::vector<float> scale(v.factor.begin(), v.factor.end());
    net_.emplace<ChannelAffine>({v.node}, name, Tensor({c}, scale), Tensor({c}, 0.0f));
    return net_.size() - 1;
  }

  // Multiplies the output channels (rows and bias) of conv/linear layer j by gain.
  void scale_outputs(int j, const std::vector<double>& gain) {
    Layer& l = net_.layer(j);
    Tensor& w = l.type() == "conv2d" ? static_cast<Conv2d&>(l).weight() : static_cast<Linear&>(l).weight();
    Tensor& b = l.type() == "conv2d" ? static_cast<Conv2d&>(l).bias() : static_cast<Linear&>(l).bias();
    const int64_t rows = w.dim(0), inner = w.numel() / rows;
    for (int64_t o = 0; o < rows; ++o) {
      for (int64_t k = 0; k < inner; ++k) w[o * inner + k] = float(double(w[o * inner + k]) * gain[size_t(o)]);
      if (!b.empty()) b[o] = float(double(b[o]) * gain[size_t(o)]);
    }
  }

  // --- layers -----------------------------------------------------------------------------------------
  Value weight_value(int i) const {
    return Value{net_.size() - 1, {}, order_.succs[size_t(i)].size() == 1 ? net_.size() - 1 : -2};
  }

  Value add_conv(int i, const Value& in) {
    const Shape s = shape_of(in);
    require(s.size() == 3, where(i) + ": Conv2d needs a C×H×W input, got " + to_string(s));
    NirConv c = nir_conv2d(node(i), s, where(i));
    if (!in.factor.empty()) {  // input channel ci of group-local index k: weight[o][k] · factor[ci]
      const int64_t per_group_in = c.spec.in_channels / c.spec.groups, per_group_out = c.spec.out_channels / c.spec.groups;
      const int64_t plane = c.spec.kernel_h * c.spec.kernel_w;
      for (int64_t o = 0; o < c.spec.out_channels; ++o)
        for (int64_t k = 0; k < per_group_in; ++k)
          for (int64_t p = 0; p < plane; ++p) {
            float& w = c.weight[(o * per_group_in + k) * plane + p];
            w = float(double(w) * in.factor[size_t((o / per_group_out) * per_group_in + k)]);
          }
    }
    net_.emplace<Conv2d>({in.node}, unique_name(node(i).name), c.spec, std::move(c.weight), std::move(c.bias));
    return weight_value(i);
  }

  Value add_linear(int i, const Value& in) {
    const Shape s = shape_of(in);
    require(s.size() == 1, where(i) + ": " + node(i).type + " needs a flat input (add a Flatten), got " + to_string(s));
    Tensor w = nir_tensor(node(i), "weight", where(i)), b;
    require(w.rank() == 2 && w.dim(1) == s[0], where(i) + ": weight " + to_string(w.shape()) +
                                                   " does not take an input of " + std::to_string(s[0]) + " values");
    if (node(i).type == "Affine") {
      b = nir_tensor(node(i), "bias", where(i));
      require(b.shape() == Shape{w.dim(0)}, where(i) + ": bias " + to_string(b.shape()) + " for " +
                                                std::to_string(w.dim(0)) + " outputs");
    }
    if (!in.factor.empty())
      for (int64_t o = 0; o < w.dim(0); ++o)
        for (int64_t f = 0; f < s[0]; ++f) w[o * s[0] + f] = float(double(w[o * s[0] + f]) * in.factor[size_t(f)]);
    net_.emplace<Linear>({in.node}, unique_name(node(i).name), std::move(w), std::move(b));
    return weight_value(i);
  }

  Value add_neuron(int i, Value in) {
    const Shape s = shape_of(in);
    NirNeuron n = nir_neuron(node(i), s, node(i).type == "IF" && o_.if_dt > 0 ? o_.if_dt : o_.dt, where(i));
    std::vector<double> gain = n.gain;
    for (size_t c = 0; c < gain.size() && !in.factor.empty(); ++c) gain[c] *= in.factor[c];
    bool unit = true;
    for (double g : gain) unit = unit && is_one(g);
    int src = in.node;
    if (!unit && in.foldable >= 0) {
      scale_outputs(in.foldable, gain);
      note(i, "input gain folded into '" + net_.layer(in.foldable).name() + "'");
    } else if (!unit) {
      src = apply_factor(Value{in.node, gain, -2}, unique_name(node(i).name + ".gain"));
      note(i, "input gain applied by a channel_affine layer");
    }
    NeuronConfig cfg;
    cfg.model = n.leaky ? NeuronModel::LIF : NeuronModel::IF;
    cfg.beta = n.leaky ? n.beta : 1.0f;
    cfg.reset = Reset::Zero;
    cfg.v_init = 0.0f;
    cfg.spikes = Spikes::Binary;
    auto& layer = net_.emplace<NeuronLayer>({src}, unique_name(node(i).name), s[0], n.theta, SourceActivation::Clip, 0, cfg);
    if (!n.bias.empty()) layer.set_bias(Tensor({1, s[0]}, n.bias), true);
    Value out{net_.size() - 1, {}, -2};
    bool theta_one = true;
    for (float t : n.theta) theta_one = theta_one && t == 1.0f;
    if (!theta_one)  // snnc's spikes carry θ, NIR's are 1
      for (float t : n.theta) out.factor.push_back(1.0 / double(t));
    return out;
  }

  Value add_scale(int i, Value in) {
    const std::vector<float> s = nir_per_channel(node(i), "scale", shape_of(in), where(i));
    if (in.factor.empty()) in.factor.assign(s.size(), 1.0);
    bool unit = true;
    for (size_t c = 0; c < s.size(); ++c) unit = is_one(in.factor[c] *= double(s[c])) && unit;
    if (unit) in.factor.clear();  // e.g. snnc's own Scale θ after a neuron: its spikes already carry θ
    if (order_.succs[size_t(i)].size() != 1) in.foldable = -2;
    return in;
  }

  Value add_pool(int i, Value in) {
    const Shape s = shape_of(in);
    require(s.size() == 3, where(i) + ": " + node(i).type + " needs a C×H×W input, got " + to_string(s));
    const PoolSpec spec = nir_pool(node(i), where(i));
    net_.emplace<AvgPool2d>({in.node}, unique_name(node(i).name), spec);
    if (node(i).type == "SumPool2d") {  // a sum over the window is its average times the window's size
      if (in.factor.empty()) in.factor.assign(size_t(s[0]), 1.0);
      for (double& f : in.factor) f *= double(spec.kernel_h * spec.kernel_w);
    }
    return Value{net_.size() - 1, in.factor, -2};
  }

  Value add_flatten(int i, Value in) {
    const Shape s = shape_of(in);
    nir_check_flatten(node(i), s, where(i));
    if (s.size() == 1) return Value{in.node, in.factor, -2};  // already flat
    net_.emplace<Flatten>({in.node}, unique_name(node(i).name));
    std::vector<double> per_feature;
    if (!in.factor.empty()) {  // feature f of channel f / (H·W)
      const int64_t plane = s[1] * s[2];
      for (int64_t f = 0; f < numel_of(s); ++f) per_feature.push_back(in.factor[size_t(f / plane)]);
    }
    return Value{net_.size() - 1, per_feature, -2};
  }

  const NirGraphData& g_;
  const std::string& path_;
  const NirImportOptions& o_;
  NirImportReport& report_;
  NirOrder order_;
  Network net_;
  std::vector<Value> values_;
};

}  // namespace

Network import_nir(const std::string& path, const NirImportOptions& options, NirImportReport* report) {
  require(std::isfinite(options.dt) && options.dt > 0, "--dt must be a positive number, got " + std::to_string(options.dt));
  require(std::isfinite(options.if_dt) && options.if_dt >= 0,
          "--if-dt must be a positive number, got " + std::to_string(options.if_dt));
  const NirGraphData g = read_nir_graph(path);
  NirImportReport r;
  r.nodes = int64_t(g.nodes.size());
  r.edges = int64_t(g.edges.size());
  Network net = Importer(g, path, options, r).build();
  check_finite_parameters(net);
  net.metadata()["imported_from"] = "NIR " + (g.version.empty() ? std::string("(no version)") : g.version);
  if (report) *report = r;
  return net;
}

}  // namespace snn
