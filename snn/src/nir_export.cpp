#include "snn/nir_export.hpp"

#include <H5Cpp.h>
#include <functional>
#include <map>

#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/layers/all.hpp"

namespace snn {

namespace {

constexpr const char* kNirVersion = "1.0";

// --- HDF5 pieces in NIR's layout (as h5py writes them: datasets, not attributes) -----------------------
void put_string(H5::Group& g, const std::string& name, const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, std::max<size_t>(1, value.size()));
  g.createDataSet(name, type, H5::DataSpace(H5S_SCALAR)).write(value, type);
}

void put_ints(H5::Group& g, const std::string& name, const std::vector<int64_t>& v) {
  const hsize_t n = v.size();
  g.createDataSet(name, H5::PredType::NATIVE_INT64, H5::DataSpace(1, &n)).write(v.data(), H5::PredType::NATIVE_INT64);
}

void put_int(H5::Group& g, const std::string& name, int64_t v) {
  g.createDataSet(name, H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR)).write(&v, H5::PredType::NATIVE_INT64);
}

void put_floats(H5::Group& g, const std::string& name, const std::vector<float>& v, const Shape& shape) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  g.createDataSet(name, H5::PredType::NATIVE_FLOAT, H5::DataSpace(int(dims.size()), dims.data()))
      .write(v.data(), H5::PredType::NATIVE_FLOAT);
}

void put_tensor(H5::Group& g, const std::string& name, const Tensor& t) {
  put_floats(g, name, std::vector<float>(t.data(), t.data() + t.numel()), t.shape());
}

void put_edges(H5::Group& g, const std::vector<std::pair<std::string, std::string>>& edges) {
  size_t len = 1;
  for (const auto& [a, b] : edges) len = std::max({len, a.size(), b.size()});
  std::vector<char> buf(edges.size() * 2 * len, '\0');
  for (size_t e = 0; e < edges.size(); ++e) {
    std::copy(edges[e].first.begin(), edges[e].first.end(), buf.begin() + long(2 * e * len));
    std::copy(edges[e].second.begin(), edges[e].second.end(), buf.begin() + long((2 * e + 1) * len));
  }
  const hsize_t dims[2] = {edges.size(), 2};
  H5::StrType type(H5::PredType::C_S1, len);
  H5::DataSet ds = g.createDataSet("edges", type, H5::DataSpace(2, dims));
  if (!edges.empty()) ds.write(buf.data(), type);
}

// --- the graph ---------------------------------------------------------------------------------------
struct NirNode {
  std::string name, type;
  std::function<void(H5::Group&)> write;  // the parameters
};

std::string where(const Network& net, int i) {
  return "layer '" + net.layer(i).name() + "' (" + net.layer(i).type() + ")";
}

// Per element of a [C, ...] shape, the channel's value.
std::vector<float> per_element(const Shape& shape, const std::function<float(int64_t)>& of_channel) {
  const int64_t n = numel_of(shape), inner = n / shape[0];
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = of_channel(k / inner);
  return v;
}

class Exporter {
 public:
  Exporter(const Network& net, const NirExportOptions& o) : net_(net), o_(o), sources_(size_t(net.size())) {
    readers_.assign(size_t(net.size()), 0);
    for (int i = 0; i < net.size(); ++i)
      for (int j : net.inputs(i))
        if (j >= 0) ++readers_[size_t(j)];
    fold_into_.assign(size_t(net.size()), -1);
    for (int k : net.neuron_nodes())
      if (!net.neuron(k).bias().empty() && (constant_bias(k) || o_.mean_bias)) fold_into_[size_t(k)] = fold_target(k);
  }

  void build() {
    net_.validate();
    add_input();
    for (int i = 0; i < net_.size(); ++i) add_layer(i);
    const int out = net_.output_node();
    const Shape shape = net_.output_shape(out);
    nodes_.push_back({"output", "Output", [shape](H5::Group& g) { put_ints(g, "shape", shape); }});
    connect(out, "output");
  }

  void write(const std::string& path) const {
    h5::write_atomically(path, [&](H5::H5File& file) {
      H5::Group root = file.openGroup("/");
      put_string(root, "version", kNirVersion);
      H5::Group graph = file.createGroup("node");
      put_string(graph, "type", "NIRGraph");
      H5::Group nodes = graph.createGroup("nodes");
      for (const auto& n : nodes_) {
        H5::Group g = nodes.createGroup(n.name);
        put_string(g, "type", n.type);
        n.write(g);
      }
      put_edges(graph, edges_);
      H5::Group meta = graph.createGroup("metadata");
      put_string(meta, "exporter", std::string("snnc ") + "NIR export");
      std::string approx;
      for (const auto& a : report.approximations) approx += (approx.empty() ? "" : "; ") + a;
      put_string(meta, "approximations", approx.empty() ? "none" : approx);
    });
  }

  NirExportReport report;
  int64_t node_count() const { return int64_t(nodes_.size()); }
  int64_t edge_count() const { return int64_t(edges_.size()); }

 private:
  void add_input() {
    const Shape shape = net_.input_shape();
    const Preprocessing pre = net_.preprocessing();
    nodes_.push_back({"input", "Input", [shape, pre](H5::Group& g) {
                        put_ints(g, "shape", shape);
                        if (pre.identity()) return;
                        // The graph takes the normalised image: x' = (x − mean[c]) / std[c].
                        H5::Group meta = g.createGroup("metadata");
                        put_floats(meta, "normalise_mean", pre.mean, {int64_t(pre.mean.size())});
                        put_floats(meta, "normalise_std", pre.std, {int64_t(pre.std.size())});
                      }});
    input_sources_ = {"input"};
  }

  // Edges from everything node j's output is the sum of, into `target`.
  void connect(int j, const std::string& target) {
    for (const auto& s : j == Network::kInput ? input_sources_ : sources_[size_t(j)]) edges_.push_back({s, target});
  }

  void add_layer(int i) {
    const Layer& layer = net_.layer(i);
    const std::string& type = layer.type();
    const std::string name = "n" + std::to_string(i) + "_" + layer.name();
    if (type == "add") {  // NIR sums a node's incoming edges: the add's inputs go to its readers
      for (int j : net_.inputs(i)) {
        const auto& s = j == Network::kInput ? input_sources_ : sources_[size_t(j)];
        sources_[size_t(i)].insert(sources_[size_t(i)].end(), s.begin(), s.end());
      }
      return;
    }
    if (type == "conv2d") add_conv(i, name);
    else if (type == "linear") add_linear(i, name);
    else if (type == "neuron") return add_neuron(i, name);
    else if (type == "avgpool2d" || type == "adaptive_avgpool2d") add_avgpool(i, name);
    else if (type == "flatten") {
      const Shape in = net_.input_shapes(i)[0];
      nodes_.push_back({name, "Flatten", [in](H5::Group& g) {
                          put_int(g, "start_dim", 0);
                          put_int(g, "end_dim", -1);
                          put_ints(g, "input_type", in);  // nir 1.0.8 writes and reads it as a dataset
                        }});
    } else if (type == "maxpool2d") {
      throw Error(where(net_, i) + ": snnc's spiking max pooling (a neuron passes the spikes of the window's "
                                   "most active input) has no NIR node; export a network with average pooling");
    } else {
      throw Error(where(net_, i) + ": NIR has no node for this layer type (NIR export takes conv2d, linear, "
                                   "neuron, avgpool2d, adaptive_avgpool2d with even windows, flatten, add)");
    }
    connect(net_.inputs(i)[0], name);
    sources_[size_t(i)] = {name};
  }

  void add_conv(int i, const std::string& name) {
    const auto& conv = static_cast<const Conv2d&>(net_.layer(i));
    const Conv2dSpec s = conv.spec();
    const Shape in = net_.input_shapes(i)[0];
    const Tensor bias = folded_bias(i, conv.bias(), s.out_channels);
    const Tensor weight = conv.weight();
    nodes_.push_back({name, "Conv2d", [s, in, bias, weight](H5::Group& g) {
                        put_tensor(g, "weight", weight);
                        put_tensor(g, "bias", bias);
                        put_ints(g, "stride", {s.stride_h, s.stride_w});
                        put_ints(g, "padding", {s.pad_h, s.pad_w});
                        put_ints(g, "dilation", {1, 1});
                        put_int(g, "groups", s.groups);
                        put_ints(g, "input_shape", {in[1], in[2]});
                      }});
  }

  void add_linear(int i, const std::string& name) {
    const auto& lin = static_cast<const Linear&>(net_.layer(i));
    const Tensor bias = folded_bias(i, lin.bias(), lin.out_features());
    const Tensor weight = lin.weight();
    nodes_.push_back({name, "Affine", [bias, weight](H5::Group& g) {
                        put_tensor(g, "weight", weight);
                        put_tensor(g, "bias", bias);
                      }});
  }

  void add_avgpool(int i, const std::string& name) {
    const Shape in = net_.input_shapes(i)[0], out = net_.output_shape(i);
    PoolSpec s;
    if (net_.layer(i).type() == "avgpool2d") {
      s = static_cast<const PoolLayer&>(net_.layer(i)).spec();
      require(!s.ceil_mode && ((s.pad_h == 0 && s.pad_w == 0) || s.count_include_pad),
              where(net_, i) + ": ceil mode or padding left out of the divisor has no NIR AvgPool2d equivalent");
    } else {
      require(in[1] % out[1] == 0 && in[2] % out[2] == 0,
              where(net_, i) + ": uneven adaptive windows (" + to_string(in) + " -> " + to_string(out) +
                  ") have no NIR AvgPool2d equivalent");
      s = {in[1] / out[1], in[2] / out[2], in[1] / out[1], in[2] / out[2], 0, 0, false, true};
    }
    nodes_.push_back({name, "AvgPool2d", [s](H5::Group& g) {
                        put_ints(g, "kernel_size", {s.kernel_h, s.kernel_w});
                        put_ints(g, "stride", {s.stride_h, s.stride_w});
                        put_ints(g, "padding", {s.pad_h, s.pad_w});
                      }});
  }

  void add_neuron(int i, const std::string& name) {
    const NeuronLayer& n = net_.neuron(i);
    const NeuronConfig& cfg = n.config();
    const std::string signed_note = cfg.spikes == Spikes::Signed ? " and sends signed spikes (−θ, 0, θ)" : "";
    require(cfg.reset == Reset::Zero, where(net_, i) + " resets by subtraction" + signed_note +
                                          "; NIR's IF and LIF reset to v_reset and spike 0 or 1. Convert with "
                                          "--reset zero (binary spikes) to export it");
    require(cfg.spikes == Spikes::Binary, where(net_, i) + " sends signed spikes (−θ, 0, θ); NIR's IF and LIF "
                                                           "neurons spike 0 or 1. Convert with --spikes binary");
    require(cfg.v_init == 0.0f, where(net_, i) + " starts its membrane at v_init·θ = " + std::to_string(cfg.v_init) +
                                    "·θ; NIR neurons start at 0. Convert with --v-init 0 to export it");
    if (!n.bias().empty() && !constant_bias(i) && !o_.mean_bias)
      throw Error(where(net_, i) + " has per-step calibration biases (" + std::to_string(n.bias_steps()) +
                  " steps), which NIR cannot express; export the uncalibrated model, or pass --mean-bias to use "
                  "their mean over steps (an approximation, recorded in the file)");
    const Shape shape = net_.output_shape(i);
    const std::vector<float> theta = per_element(shape, [&](int64_t c) { return n.theta(c); });
    const std::vector<float> ones(theta.size(), 1.0f), zeros(theta.size(), 0.0f);
    if (cfg.model == NeuronModel::LIF && cfg.beta != 1.0f) {
      require(cfg.beta > 0.0f && cfg.beta < 1.0f, where(net_, i) + ": leak factor β must be in (0, 1) for NIR's LIF");
      const float tau = 1.0f / (1.0f - cfg.beta);
      const std::vector<float> taus(theta.size(), tau);
      nodes_.push_back({name, "LIF", [=](H5::Group& g) {
                          put_floats(g, "tau", taus, shape);
                          put_floats(g, "r", taus, shape);
                          put_floats(g, "v_leak", zeros, shape);
                          put_floats(g, "v_threshold", theta, shape);
                          put_floats(g, "v_reset", zeros, shape);
                        }});
    } else {
      nodes_.push_back({name, "IF", [=](H5::Group& g) {
                          put_floats(g, "r", ones, shape);
                          put_floats(g, "v_threshold", theta, shape);
                          put_floats(g, "v_reset", zeros, shape);
                        }});
    }
    const std::string amplitude = name + ".amplitude";  // NIR spikes are 1, snnc's carry θ
    nodes_.push_back({amplitude, "Scale", [=](H5::Group& g) { put_floats(g, "scale", theta, shape); }});
    connect(net_.inputs(i)[0], name);
    edges_.push_back({name, amplitude});
    sources_[size_t(i)] = {amplitude};
  }

  // A bias constant over time is exactly a bias of the layer feeding the neuron.
  bool constant_bias(int k) const { return net_.neuron(k).bias_constant() || net_.neuron(k).bias_steps() == 1; }

  // Where neuron k's mean bias goes: a conv2d/linear layer whose output reaches k alone, directly or as
  // one input of the residual add k reads (NIR sums the add's inputs at k: v += (a − b̄) + c).
  int fold_target(int k) const {
    auto foldable = [&](int j) {
      return j >= 0 && readers_[size_t(j)] == 1 &&
             (net_.layer(j).type() == "conv2d" || net_.layer(j).type() == "linear");
    };
    const int j = net_.inputs(k)[0];
    if (foldable(j)) return j;
    if (j >= 0 && net_.layer(j).type() == "add" && readers_[size_t(j)] == 1)
      for (int a : net_.inputs(j))
        if (foldable(a)) return a;
    throw Error(where(net_, k) + ": its mean calibration bias can be folded only into a conv2d or linear layer "
                                 "that feeds it alone (directly or through a residual add)");
  }

  // The bias of weight layer i, less the mean over steps of the calibration bias of the neuron layers
  // folded into it (with mean_bias; a neuron computes v += x − b).
  Tensor folded_bias(int i, const Tensor& bias, int64_t C) {
    Tensor b = bias.empty() ? Tensor({C}, 0.0f) : bias;
    for (int k = 0; k < net_.size(); ++k) {
      if (fold_into_[size_t(k)] != i) continue;
      const Tensor& nb = net_.neuron(k).bias();
      const int64_t steps = nb.dim(0);
      for (int64_t c = 0; c < C; ++c) {
        double m = 0;
        for (int64_t t = 0; t < steps; ++t) m += nb[t * C + c];
        b[c] -= float(m / double(steps));
      }
      if (!constant_bias(k))
        report.approximations.push_back(net_.layer(k).name() + ": bias over " + std::to_string(steps) +
                                        " steps replaced by its mean, folded into " + net_.layer(i).name());
    }
    return b;
  }

  const Network& net_;
  NirExportOptions o_;
  std::vector<int> readers_;
  std::vector<int> fold_into_;  // per neuron node with a bias: the weight layer its mean bias goes into
  std::vector<std::vector<std::string>> sources_;  // per node: the NIR nodes whose outputs sum to its output
  std::vector<std::string> input_sources_;
  std::vector<NirNode> nodes_;
  std::vector<std::pair<std::string, std::string>> edges_;
};

}  // namespace

NirExportReport export_nir(const Network& net, const std::string& path, const NirExportOptions& options) {
  Exporter e(net, options);
  e.build();
  e.write(path);
  e.report.nodes = e.node_count();
  e.report.edges = e.edge_count();
  return e.report;
}

}  // namespace snn
