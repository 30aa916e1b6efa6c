// Tensor ops on activations -> snn layers. Each handler checks the op's constant arguments and either
// adds a layer (or folds into one) or fails naming what is not supported; nothing is silently dropped.
#include <cmath>
#include <limits>
#include <sstream>

#include "interpreter.hpp"
#include "snn/conversion/batchnorm.hpp"
#include "snn/layers/all.hpp"

namespace snn::conversion::detail {

namespace {

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string ints_str(const std::vector<int64_t>& v) { return snn::to_string(snn::Shape(v.begin(), v.end())); }

const std::set<std::string> kIdentityOps = {
    "aten::dropout",       "aten::dropout_",       "aten::feature_dropout",       "aten::feature_dropout_",
    "aten::alpha_dropout", "aten::alpha_dropout_", "aten::feature_alpha_dropout", "aten::feature_alpha_dropout_",
    "aten::contiguous",    "aten::detach",         "aten::detach_",               "aten::clone"};
const std::set<std::string> kActivationOps = {"aten::relu",    "aten::relu_",  "aten::hardtanh", "aten::hardtanh_",
                                              "aten::relu6",   "aten::relu6_", "aten::clamp",    "aten::clamp_",
                                              "aten::clip",    "aten::clip_",  "aten::clamp_min", "aten::clamp_min_"};

}  // namespace

bool Interpreter::run_tensor_op(Node* n, Frame& f, const std::vector<Val>& in) {
  const std::string k = n->kind().toQualString();
  const bool any_act = std::any_of(in.begin(), in.end(), [](const Val& v) { return v.is_act(); });

  // Shape queries: the batch dimension stays symbolic, the rest is known.
  if (k == "aten::size" && in[0].is_act()) {
    const snn::Shape s = logical_shape(in[0]);
    if (in.size() == 1) {
      Val r;
      r.kind = Val::Kind::List;
      r.type = c10::ListType::ofInts();
      r.items.push_back(Val::batch());
      for (int64_t d : s) r.items.push_back(Val::constant(d));
      set_outputs(n, f, {std::move(r)});
      return true;
    }
    int64_t d = as_int(in[1], "size dimension");
    const int64_t rank = int64_t(s.size()) + 1;
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) fail(n, "size(" + std::to_string(d) + ") of a tensor with " + std::to_string(rank) + " dimensions");
    set_outputs(n, f, {d == 0 ? Val::batch() : Val::constant(s[size_t(d - 1)])});
    return true;
  }
  if (k == "aten::dim" && in[0].is_act()) {
    set_outputs(n, f, {Val::constant(int64_t(logical_shape(in[0]).size()) + 1)});
    return true;
  }
  if (k == "aten::len" && in[0].kind == Val::Kind::List) {
    set_outputs(n, f, {Val::constant(int64_t(in[0].items.size()))});
    return true;
  }
  if (k == "aten::__getitem__" && (in[0].kind == Val::Kind::List || in[0].kind == Val::Kind::Tuple)) {
    int64_t i = as_int(in[1], "index");
    const int64_t size = int64_t(in[0].items.size());
    if (i < 0) i += size;
    if (i < 0 || i >= size) fail(n, "index out of range");
    set_outputs(n, f, {in[0].items[size_t(i)]});
    return true;
  }
  if (k == "aten::slice" && in[0].kind == Val::Kind::List) {  // x.shape[-2:]: a list with the batch in it
    const int64_t size = int64_t(in[0].items.size());
    auto index = [&](const Val& v, int64_t fallback) {
      if (v.is_none()) return fallback;
      const int64_t i = as_int(v, "slice index");
      return std::min(std::max(i < 0 ? i + size : i, int64_t(0)), size);
    };
    const int64_t start = in.size() > 1 ? index(in[1], 0) : 0, end = in.size() > 2 ? index(in[2], size) : size;
    const int64_t step = in.size() > 3 ? as_int(in[3], "slice step") : 1;
    if (step <= 0) fail(n, "list slice with step " + std::to_string(step));
    Val r = in[0];
    r.items.clear();
    for (int64_t i = start; i < end; i += step) r.items.push_back(in[0].items[size_t(i)]);
    if (std::all_of(r.items.begin(), r.items.end(), [](const Val& v) { return v.is_const(); })) {
      c10::impl::GenericList list(c10::IntType::get());
      for (const Val& v : r.items) list.push_back(v.iv);
      set_outputs(n, f, {Val::constant(c10::IValue(std::move(list)))});
    } else {
      set_outputs(n, f, {std::move(r)});
    }
    return true;
  }
  if ((k == "aten::__is__" || k == "aten::__isnot__") && any_act) {
    // An activation is never None (the only identity test scripted code does on tensors).
    set_outputs(n, f, {Val::constant(k == "aten::__isnot__")});
    return true;
  }
  const bool list_of_acts = !in.empty() && in[0].kind == Val::Kind::List &&
                            std::any_of(in[0].items.begin(), in[0].items.end(), [](const Val& v) { return v.is_act(); });
  if (!any_act && !list_of_acts) return false;

  const int first_new_node = net_.size();
  const std::vector<int> gens_before = gen_;
  c10::optional<Val> result = tensor_op(n, k, in);
  if (!result) return false;
  Val out = std::move(*result);
  // An in-place op (relu_, add_ ...) changes its input tensor: later reads of that tensor, even through
  // other TorchScript values (a caller's variable), must see the new activation.
  const bool inplace = k.size() > 2 && k.back() == '_' && k[k.size() - 2] != '_';
  if (inplace && out.kind == Val::Kind::Act) {
    if (in[0].kind == Val::Kind::Act && resolve(in[0].act) != resolve(out.act))
      replaced_[size_t(resolve(in[0].act))] = out.act;
    if (in[0].kind == Val::Kind::Channels) replaced_views_[in[0].view_id] = out.act;
  }
  const std::vector<c10::IValue> reals = run_concrete(n, in);
  if (!reals.empty()) attach_real(out, reals[0]);
  record_references(out, first_new_node, gens_before);
  set_outputs(n, f, {std::move(out)});
  return true;
}

c10::optional<Val> Interpreter::tensor_op(Node* n, const std::string& k, const std::vector<Val>& in) {
  if (kIdentityOps.count(k)) {
    if (k.find("dropout") != std::string::npos && in.size() >= 3 && as_bool(in[2], "dropout's train flag"))
      fail(n, "dropout in training mode (the model was traced after model.train()?); call model.eval() before exporting");
    if (!in[0].is_act()) return c10::nullopt;
    return in[0];
  }
  if (k == "aten::to" || k == "aten::type_as") {
    // x.float(), x.to(device): identity on float32 activations; other dtypes would change the numbers.
    const auto& args = n->schema().arguments();
    for (size_t i = 1; i < in.size() && i < args.size(); ++i)
      if (args[i].name() == "dtype" && !in[i].is_none() && as_int(in[i], "dtype") != int64_t(c10::ScalarType::Float))
        fail(n, "conversion of an activation to dtype " + std::string(c10::toString(c10::ScalarType(as_int(in[i], "dtype")))),
             "snnc computes in float32");
    if (!in[0].is_act()) return c10::nullopt;
    return in[0];
  }
  if (k == "aten::cat" || k == "aten::concat" || k == "aten::concatenate") return op_cat(n, in);
  // Ops whose first argument may be a constant: a summand, addmm's bias.
  if (k == "aten::add" || k == "aten::add_") return op_add(n, in);
  if (k == "aten::addmm") return op_linear(n, k, in);
  if (!in[0].is_act()) return c10::nullopt;
  if (k == "aten::squeeze") return op_squeeze(n, in);
  if (k == "aten::conv2d" || k == "aten::_convolution" || k == "aten::convolution") return op_conv(n, in);
  if (k == "aten::batch_norm") return op_batch_norm(n, in);
  if (kActivationOps.count(k)) return op_activation(n, k, in);
  if (k == "aten::avg_pool2d" || k == "aten::max_pool2d") return op_pool(n, k, in);
  if (k == "aten::adaptive_avg_pool2d") return op_adaptive_avg_pool(n, in);
  if (k == "aten::mean") return op_mean(n, in);
  if (k == "aten::flatten") return op_flatten(n, in);
  if (k == "aten::view" || k == "aten::reshape") return op_view(n, in);
  if (k == "aten::linear" || k == "aten::addmm" || k == "aten::matmul" || k == "aten::mm") return op_linear(n, k, in);
  if (k == "aten::upsample_nearest2d" || k == "aten::_upsample_nearest_exact2d" || k == "aten::upsample_nearest_exact2d")
    return op_upsample(n, k, in);
  if (k == "aten::chunk" || k == "aten::unsafe_chunk" || k == "aten::split" || k == "aten::unsafe_split" ||
      k == "aten::split_with_sizes" || k == "aten::unsafe_split_with_sizes")
    return op_split(n, k, in);
  if (k == "aten::slice" || k == "aten::narrow") return op_slice(n, k, in);
  if (k == "aten::transpose" || k == "aten::permute") return op_transpose(n, k, in);
  return c10::nullopt;
}

// aten::conv2d(input, weight, bias, stride, padding, dilation, groups)
// aten::_convolution / aten::convolution(input, weight, bias, stride, padding, dilation, transposed,
//                                         output_padding, groups, ...)   (traced graphs)
Val Interpreter::op_conv(Node* n, const std::vector<Val>& in) {
  const std::string k = n->kind().toQualString();
  const bool generic = k != "aten::conv2d";
  if (in.size() < (generic ? 9u : 7u)) fail(n, k + " with " + std::to_string(in.size()) + " arguments");
  const int node = node_of(n, in[0], "the convolution input");
  const at::Tensor w = as_tensor(in[1], "the convolution weight");
  if (w.dim() != 4)
    fail(n, "only 2-D convolutions are supported (the weight has " + std::to_string(w.dim()) + " dimensions)");
  if (generic && as_bool(in[6], "transposed")) fail(n, "transposed convolutions are not supported");
  const auto stride = as_pair(in[3], "stride");
  const auto dilation = as_pair(in[5], "dilation");
  const int64_t groups = as_int(in[generic ? 8 : 6], "groups");
  if (dilation[0] != 1 || dilation[1] != 1) fail(n, "dilated convolutions (dilation " + ints_str(dilation) + ") are not supported");
  std::vector<int64_t> pad;
  if (in[4].is_const() && in[4].iv.isString()) {  // conv2d(..., padding="same"|"valid")
    const std::string mode = in[4].iv.toStringRef();
    if (mode == "valid") {
      pad = {0, 0};
    } else if (mode == "same") {
      if ((w.size(2) - 1) % 2 || (w.size(3) - 1) % 2)
        fail(n, "padding='same' with an even kernel pads asymmetrically; not supported");
      pad = {(w.size(2) - 1) / 2, (w.size(3) - 1) / 2};
    } else {
      fail(n, "unknown padding mode '" + mode + "'");
    }
  } else {
    pad = as_pair(in[4], "padding");
  }
  snn::Conv2dSpec spec;
  spec.out_channels = w.size(0);
  spec.in_channels = w.size(1) * groups;
  spec.kernel_h = w.size(2);
  spec.kernel_w = w.size(3);
  spec.stride_h = stride[0];
  spec.stride_w = stride[1];
  spec.pad_h = pad[0];
  spec.pad_w = pad[1];
  spec.groups = groups;
  snn::Tensor bias = in[2].is_none() ? snn::Tensor() : to_snn_tensor(as_tensor(in[2], "the convolution bias"));
  auto layer = std::make_unique<snn::Conv2d>(layer_name("conv"), spec, to_snn_tensor(w), std::move(bias));
  return Val::activation(add_layer(n, std::move(layer), {node}));
}

// aten::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
// Folded into the conv/linear that produced its input when nothing else reads that layer's output;
// otherwise (after a concatenation, pooling, a sum, the model input, or a shared output) a ChannelAffine.
Val Interpreter::op_batch_norm(Node* n, const std::vector<Val>& in) {
  if (in.size() < 8) fail(n, "batch_norm with " + std::to_string(in.size()) + " arguments");
  const std::string bn = stack_.back()->path.empty() ? std::string("batch_norm") : stack_.back()->path;
  const int node = node_of(n, in[0], "the batch norm input");
  if (as_bool(in[5], "batch norm's training flag"))
    fail(n, "batch norm '" + bn + "' runs in training mode",
         "call model.eval() before torch.jit.trace (a traced graph keeps the mode it was traced in)");
  if (in[3].is_none() || in[4].is_none())
    fail(n, "batch norm '" + bn + "' has no running statistics (track_running_stats=False)",
         "only eval-mode batch norm with running statistics can be converted");
  BatchNormParams p;
  p.mean = to_floats(as_tensor(in[3], "running_mean"));
  p.var = to_floats(as_tensor(in[4], "running_var"));
  if (!in[1].is_none()) p.gamma = to_floats(as_tensor(in[1], "batch norm weight"));
  if (!in[2].is_none()) p.beta = to_floats(as_tensor(in[2], "batch norm bias"));
  p.eps = as_double(in[7], "eps");
  snn::Layer* layer = node >= 0 ? &net_.layer(node) : nullptr;
  auto* conv = dynamic_cast<snn::Conv2d*>(layer);
  auto* linear = dynamic_cast<snn::Linear*>(layer);
  if ((conv || linear) && !consumed(node)) {
    if (conv)
      fold_batchnorm(*conv, p);
    else
      fold_batchnorm(*linear, p);
    ++gen_[size_t(node)];
    if (report_) {
      ++report_->batchnorms_folded;
      report_->notes.push_back("batch norm '" + bn + "' folded into '" + layer->name() + "'");
    }
    return Val::activation(new_act(node));
  }
  const snn::Shape& s = net_.output_shape(node);
  if (int64_t(p.mean.size()) != s[0])
    fail(n, "batch norm '" + bn + "' has " + std::to_string(p.mean.size()) + " channels; its input " +
                snn::to_string(s) + " has " + std::to_string(s[0]));
  auto affine = std::make_unique<snn::ChannelAffine>(
      snn::ChannelAffine::from_batch_norm(layer_name("bn"), p.mean, p.var, p.gamma, p.beta, p.eps));
  if (report_)
    report_->notes.push_back("batch norm '" + bn + "' kept as a per-channel affine layer (it follows " +
                             (layer ? "'" + layer->name() + "' (" + layer->type() + ")" : std::string("the input")) +
                             ", which it cannot be folded into)");
  return Val::activation(add_layer(n, std::move(affine), {node}));
}

Val Interpreter::neuron(Node* n, const Val& x, snn::SourceActivation act, std::vector<float> theta, int levels,
                        const std::string& name) {
  const int node = node_of(n, x, "the activation input");
  const snn::Shape& s = net_.output_shape(node);
  auto layer = std::make_unique<snn::NeuronLayer>(name, s[0], std::move(theta), act, levels, opts_.neuron);
  if (report_) {
    ++report_->activations;
    if (act == snn::SourceActivation::ReLU) ++report_->relu_layers;
  }
  return Val::activation(add_layer(n, std::move(layer), {node}));
}

// relu, hardtanh(min, max), relu6, clamp/clip(min, max), clamp_min(min): a spiking neuron needs the
// activation to be 0 below 0, so min must be 0; a finite max is the clip threshold θ.
Val Interpreter::op_activation(Node* n, const std::string& k, const std::vector<Val>& in) {
  const double inf = std::numeric_limits<double>::infinity();
  double lo = 0.0, hi = inf;
  if (k == "aten::hardtanh" || k == "aten::hardtanh_") {
    lo = in.size() > 1 ? as_double(in[1], "hardtanh min") : -1.0;
    hi = in.size() > 2 ? as_double(in[2], "hardtanh max") : 1.0;
  } else if (k == "aten::relu6" || k == "aten::relu6_") {
    hi = 6.0;
  } else if (k == "aten::clamp_min" || k == "aten::clamp_min_") {
    lo = as_double(in[1], "clamp min");
  } else if (k != "aten::relu" && k != "aten::relu_") {  // clamp / clip
    lo = in.size() > 1 && !in[1].is_none() ? as_double(in[1], "clamp min") : -inf;
    hi = in.size() > 2 && !in[2].is_none() ? as_double(in[2], "clamp max") : inf;
  }
  if (!in[0].is_act()) fail(n, k + " of a value that is not computed from the input");
  const std::string op = k.substr(6, k.back() == '_' ? k.size() - 7 : std::string::npos);
  if (lo != 0.0)
    fail(n, op + "(min=" + num(lo) + ", max=" + num(hi) + ") is not ReLU-like",
         "a spiking neuron stands for an activation that is 0 below 0, so min must be 0");
  if (hi == inf) return neuron(n, in[0], snn::SourceActivation::ReLU, {1.0f}, 0, layer_name("relu"));
  if (!(hi > 0.0)) fail(n, op + " with max " + num(hi) + ": the clip threshold must be positive");
  return neuron(n, in[0], snn::SourceActivation::Clip, {float(hi)}, 0, layer_name("clip"));
}

// aten::avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
// aten::max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)
Val Interpreter::op_pool(Node* n, const std::string& k, const std::vector<Val>& in) {
  const bool avg = k == "aten::avg_pool2d";
  if (in.size() < 6) fail(n, k + " with " + std::to_string(in.size()) + " arguments");
  const int node = node_of(n, in[0], "the pooling input");
  const snn::Shape& s = net_.output_shape(node);
  if (s.size() != 3) fail(n, "2-D pooling of a " + snn::to_string(s) + " activation (expects [C, H, W])");
  const auto kernel = as_pair(in[1], "kernel_size");
  auto stride = as_ints(in[2], "stride");
  if (stride.empty()) stride = kernel;  // PyTorch: stride defaults to the kernel size
  if (stride.size() == 1) stride.push_back(stride[0]);
  const auto pad = as_pair(in[3], "padding");
  snn::PoolSpec spec{kernel[0], kernel[1], stride[0], stride[1], pad[0], pad[1]};
  spec.ceil_mode = as_bool(in[avg ? 4 : 5], "ceil_mode");
  if (avg) {
    spec.count_include_pad = as_bool(in[5], "count_include_pad");
    if (in.size() > 6 && !in[6].is_none()) fail(n, "avg_pool2d with divisor_override is not supported");
  } else {
    const auto dil = as_pair(in[4], "dilation");
    if (dil[0] != 1 || dil[1] != 1) fail(n, "max_pool2d with dilation " + ints_str(dil) + " is not supported");
  }
  std::unique_ptr<snn::Layer> layer;
  if (avg) {
    layer = std::make_unique<snn::AvgPool2d>(layer_name("avgpool"), spec);
  } else {
    layer = std::make_unique<snn::MaxPool2d>(layer_name("maxpool"), spec);
    if (report_) ++report_->max_pools;
  }
  return Val::activation(add_layer(n, std::move(layer), {node}));
}

// aten::adaptive_avg_pool2d(x, output_size): an ordinary average pool when the sizes divide (the same
// windows, summed in the same order), else an AdaptiveAvgPool2d with PyTorch's uneven windows.
Val Interpreter::op_adaptive_avg_pool(Node* n, const std::vector<Val>& in) {
  const int node = node_of(n, in[0], "the pooling input");
  const snn::Shape s = net_.output_shape(node);
  if (s.size() != 3) fail(n, "adaptive pooling of a " + snn::to_string(s) + " activation (expects [C, H, W])");
  std::vector<int64_t> out;
  if (in[1].is_const() && in[1].iv.isList()) {  // (None, 7): None keeps that input size
    const auto list = in[1].iv.toListRef();
    for (size_t i = 0; i < list.size(); ++i) out.push_back(list[i].isNone() ? s[1 + i] : list[i].toInt());
    if (out.size() == 1) out.push_back(out[0]);
    if (out.size() != 2) fail(n, "output_size must have 1 or 2 values");
  } else {
    out = as_pair(in[1], "output_size");
  }
  if (out[0] <= 0 || out[1] <= 0) fail(n, "adaptive average pooling to " + ints_str(out));
  if (out[0] == s[1] && out[1] == s[2]) return Val::activation(new_act(node));
  std::unique_ptr<snn::Layer> layer;
  if (s[1] % out[0] == 0 && s[2] % out[1] == 0) {
    const int64_t kh = s[1] / out[0], kw = s[2] / out[1];
    layer = std::make_unique<snn::AvgPool2d>(layer_name("avgpool"), snn::PoolSpec{kh, kw, kh, kw, 0, 0});
  } else {
    layer = std::make_unique<snn::AdaptiveAvgPool2d>(layer_name("avgpool"), out[0], out[1]);
  }
  return Val::activation(add_layer(n, std::move(layer), {node}));
}

// aten::upsample_nearest2d(x, output_size, scales_h, scales_w) and its .vec form (x, output_size or
// None, scale_factors or None); nearest_exact likewise. The index rule is PyTorch's (upsample.hpp).
Val Interpreter::op_upsample(Node* n, const std::string& k, const std::vector<Val>& in) {
  const int node = node_of(n, in[0], "the upsampling input");
  const snn::Shape s = net_.output_shape(node);
  if (s.size() != 3) fail(n, "2-D upsampling of a " + snn::to_string(s) + " activation (expects [C, H, W])");
  std::vector<int64_t> out;
  std::vector<double> scales(2, 0.0);  // 0: none given
  const auto& args = n->schema().arguments();
  const bool vec = args.size() > 2 && args[2].name() == "scale_factors";
  if (vec) {
    if (!in[1].is_none()) {
      out = as_pair(in[1], "output_size");
    } else {
      if (in[2].is_none()) fail(n, "upsampling with neither an output size nor scale factors");
      const auto list = in[2].iv.toDoubleVector();
      if (list.size() != 2) fail(n, "upsampling needs 2 scale factors, got " + std::to_string(list.size()));
      scales = list;
      for (int i = 0; i < 2; ++i) out.push_back(int64_t(double(s[size_t(1 + i)]) * scales[size_t(i)]));  // as PyTorch
    }
  } else {
    out = as_pair(in[1], "output_size");
    for (int i = 0; i < 2; ++i)
      if (in.size() > size_t(2 + i) && !in[size_t(2 + i)].is_none()) scales[size_t(i)] = as_double(in[size_t(2 + i)], "scale");
  }
  if (out[0] <= 0 || out[1] <= 0) fail(n, "upsampling to " + ints_str(out));
  // PyTorch's compute_scales_value: 1/scale when a positive scale was given, else in/out, as float.
  auto scale = [&](int i) {
    return scales[size_t(i)] > 0.0 ? float(1.0 / scales[size_t(i)]) : float(s[size_t(1 + i)]) / float(out[size_t(i)]);
  };
  snn::UpsampleSpec spec{out[0], out[1], scale(0), scale(1), k.find("exact") != std::string::npos};
  auto layer = std::make_unique<snn::UpsampleNearest>(layer_name("upsample"), spec);
  // Same size and every row/column reading itself: nothing to do. (The same size with a scale factor
  // given, e.g. 1.04 on 20 rows, still moves rows: PyTorch applies the factor, not out/in.)
  auto identity = [](const std::vector<int64_t>& idx) {
    for (size_t i = 0; i < idx.size(); ++i)
      if (idx[i] != int64_t(i)) return false;
    return true;
  };
  if (out[0] == s[1] && out[1] == s[2] && identity(layer->source_rows(s[1])) && identity(layer->source_cols(s[2])))
    return Val::activation(new_act(node));
  return Val::activation(add_layer(n, std::move(layer), {node}));
}

// aten::mean(x, dims, keepdim, dtype) over H and W: global average pooling.
Val Interpreter::op_mean(Node* n, const std::vector<Val>& in) {
  if (in.size() < 3) fail(n, "mean over all elements is not supported (only over the spatial dims 2 and 3)");
  const int node = node_of(n, in[0], "the mean input");
  const snn::Shape s = net_.output_shape(node);
  auto dims = as_ints(in[1], "mean dims");
  for (auto& d : dims)
    if (d < 0) d += int64_t(s.size()) + 1;
  std::sort(dims.begin(), dims.end());
  if (s.size() != 3 || dims != std::vector<int64_t>{2, 3})
    fail(n, "mean over dims " + ints_str(as_ints(in[1], "mean dims")) + " of a " + snn::to_string(s) + " activation",
         "only global average pooling (mean over dims 2 and 3) is supported");
  if (in.size() > 3 && !in[3].is_none()) fail(n, "mean with a dtype is not supported");
  auto layer = std::make_unique<snn::AvgPool2d>(layer_name("avgpool"), snn::PoolSpec{s[1], s[2], s[1], s[2], 0, 0});
  Val pooled = Val::activation(add_layer(n, std::move(layer), {node}));
  return as_bool(in[2], "keepdim") ? pooled : flatten_act(n, pooled);
}

Val Interpreter::flatten_act(Node* n, const Val& x) {
  const int node = node_of(n, x, "the flatten input");
  if (net_.output_shape(node).size() == 1) return x;  // already a vector per image
  return Val::activation(add_layer(n, std::make_unique<snn::Flatten>(layer_name("flatten")), {node}));
}

// aten::flatten(x, start_dim, end_dim): all dims but the batch (a Flatten layer), or only channel groups
// (the end of a channel shuffle written with flatten).
Val Interpreter::op_flatten(Node* n, const std::vector<Val>& in) {
  const snn::Shape s = logical_shape(in[0]);
  const int64_t rank = int64_t(s.size()) + 1;
  int64_t start = in.size() > 1 ? as_int(in[1], "start_dim") : 0;
  int64_t end = in.size() > 2 ? as_int(in[2], "end_dim") : -1;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  if (start == end) return in[0];
  if (start == 1 && end == rank - 1) return flatten_act(n, in[0]);
  if (start >= 1 && end > start && end < rank) {
    std::vector<int64_t> shape(s.begin(), s.begin() + (start - 1));
    int64_t merged = 1;
    for (int64_t d = start; d <= end; ++d) merged *= s[size_t(d - 1)];
    shape.push_back(merged);
    shape.insert(shape.end(), s.begin() + end, s.end());
    if (auto v = channel_view(n, in[0], shape)) return *v;
  }
  fail(n, "flatten(start_dim=" + std::to_string(start) + ", end_dim=" + std::to_string(end) + ") of a " +
              std::to_string(rank) + "-D tensor",
       "only flattening every dimension but the batch, or merging channel groups, is supported");
}

// aten::squeeze(x) or squeeze(x, dim): dropping the 1x1 of a pooled [C, 1, 1] is a flatten. The batch
// dimension is never squeezed here (PyTorch would squeeze it too for a batch of one image).
Val Interpreter::op_squeeze(Node* n, const std::vector<Val>& in) {
  const snn::Shape s = logical_shape(in[0]);
  snn::Shape kept;
  if (in.size() == 1) {
    for (int64_t d : s)
      if (d != 1) kept.push_back(d);
  } else {
    int64_t d = as_int(in[1], "squeeze dim");
    if (d < 0) d += int64_t(s.size()) + 1;
    if (d == 0) fail(n, "squeeze of the batch dimension");
    kept = s;
    if (d >= 1 && d <= int64_t(s.size()) && s[size_t(d - 1)] == 1) kept.erase(kept.begin() + (d - 1));
  }
  if (kept == s) return in[0];
  if (kept.size() == 1) return flatten_act(n, in[0]);
  fail(n, "squeeze of a " + snn::to_string(s) + " activation to " + snn::to_string(kept),
       "only squeezing to a vector per image (after global pooling) is supported");
}

// aten::view / aten::reshape: to [N, -1] (or [N, C·H·W]), to the shape it already has, or a regrouping
// of the channels that keeps H and W (a channel shuffle's [N, g, C/g, H, W] and back).
Val Interpreter::op_view(Node* n, const std::vector<Val>& in) {
  const snn::Shape s = logical_shape(in[0]);
  std::vector<Val> items;
  if (in[1].kind == Val::Kind::List) {
    items = in[1].items;
  } else {
    for (int64_t v : as_ints(in[1], "shape")) items.push_back(Val::constant(v));
  }
  auto describe = [&]() {
    std::string r = "[";
    for (size_t i = 0; i < items.size(); ++i)
      r += (i ? ", " : "") + (items[i].kind == Val::Kind::Batch ? std::string("N") : std::to_string(as_int(items[i], "size")));
    return r + "]";
  };
  if (items.empty()) fail(n, "reshape to a scalar");
  const bool batch_first = items[0].kind == Val::Kind::Batch;
  if (!batch_first && as_int(items[0], "size") != -1)
    fail(n, "reshape to " + describe() + " fixes the batch size", "use x.view(x.size(0), -1) or torch.flatten(x, 1)");
  std::vector<int64_t> rest;
  for (size_t i = 1; i < items.size(); ++i) {
    if (items[i].kind == Val::Kind::Batch) fail(n, "reshape to " + describe() + " moves the batch dimension");
    rest.push_back(as_int(items[i], "size"));
  }
  const int64_t numel = snn::numel_of(s);
  if (rest.size() == 1 && (rest[0] == numel || (rest[0] == -1 && batch_first))) return flatten_act(n, in[0]);
  if (rest == std::vector<int64_t>(s.begin(), s.end())) return in[0];
  if (auto v = channel_view(n, in[0], rest)) return *v;
  fail(n, "reshape of a " + snn::to_string(s) + " activation to " + describe(),
       "supported are flattening to [N, -1] and regrouping channels (a channel shuffle)");
}

// aten::linear(x, weight, bias); traced older-style linear layers: addmm(bias, x, weightᵀ), matmul/mm(x, weightᵀ).
Val Interpreter::op_linear(Node* n, const std::string& k, const std::vector<Val>& in) {
  at::Tensor w, b;
  Val x;
  if (k == "aten::linear") {
    x = in[0];
    w = as_tensor(in[1], "the linear weight");
    if (in.size() > 2 && !in[2].is_none()) b = as_tensor(in[2], "the linear bias");
  } else if (k == "aten::addmm") {
    if ((in.size() > 3 && as_double(in[3], "beta") != 1.0) || (in.size() > 4 && as_double(in[4], "alpha") != 1.0))
      fail(n, "addmm with beta or alpha other than 1 is not supported");
    x = in[1];
    w = as_tensor(in[2], "the matrix multiplied with the activation").t();
    b = as_tensor(in[0], "the bias added by addmm");
  } else {
    x = in[0];
    w = as_tensor(in[1], "the matrix multiplied with the activation").t();
  }
  if (w.dim() != 2) fail(n, "linear weight with " + std::to_string(w.dim()) + " dimensions");
  const int node = node_of(n, x, "the linear layer's input");
  const snn::Shape& s = net_.output_shape(node);
  if (s.size() != 1)
    fail(n, "linear layer applied to a " + snn::to_string(s) + " activation",
         "PyTorch applies it to the last dimension only; flatten the activation first");
  if (b.defined() && b.numel() != w.size(0)) fail(n, "bias of " + std::to_string(b.numel()) + " values for " + std::to_string(w.size(0)) + " outputs");
  auto layer = std::make_unique<snn::Linear>(layer_name("linear"), to_snn_tensor(w),
                                             b.defined() ? to_snn_tensor(b.reshape({-1})) : snn::Tensor());
  return Val::activation(add_layer(n, std::move(layer), {node}));
}

// aten::add(a, b, alpha): two activations (a residual connection) -> Add; an activation plus a constant
// tensor -> a bias folded into the conv/linear layer that produced the activation.
Val Interpreter::op_add(Node* n, const std::vector<Val>& in) {
  const double alpha = in.size() > 2 ? as_double(in[2], "alpha") : 1.0;
  Val a = in[0], b = in[1];
  if (a.is_act() && b.is_act()) {
    if (alpha != 1.0) fail(n, "add with alpha " + num(alpha) + " (a weighted sum) is not supported");
    const int na = node_of(n, a, "the first summand"), nb = node_of(n, b, "the second summand");
    return Val::activation(add_layer(n, std::make_unique<snn::Add>(layer_name("add")), {na, nb}));
  }
  if (!a.is_act() && alpha == 1.0) std::swap(a, b);
  if (!a.is_act() || !b.is_const() || !b.iv.isTensor())
    fail(n, "adding a constant to an activation is not supported",
         "supported are the sum of two activations (a residual) and a bias tensor right after a convolution or "
         "linear layer");
  const int node = node_of(n, a, "the summand");
  snn::Layer* layer = node >= 0 ? &net_.layer(node) : nullptr;
  auto* conv = dynamic_cast<snn::Conv2d*>(layer);
  auto* linear = dynamic_cast<snn::Linear*>(layer);
  if ((!conv && !linear) || consumed(node))
    fail(n, "adding a constant tensor is supported only as the bias of the convolution or linear layer right before it");
  const int64_t channels = conv ? conv->spec().out_channels : linear->out_features();
  at::Tensor t = as_tensor(b, "the added tensor").to(at::kDouble) * alpha;
  // Accept the broadcast shapes that add one value per output channel (or one value for all).
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  while (!sizes.empty() && sizes.front() == 1 && int64_t(sizes.size()) > (conv ? 3 : 1)) sizes.erase(sizes.begin());
  const bool per_channel = conv ? (sizes == std::vector<int64_t>{channels, 1, 1}) : (sizes == std::vector<int64_t>{channels});
  if (!per_channel && t.numel() != 1)
    fail(n, "adding a tensor of shape " + ints_str(std::vector<int64_t>(t.sizes().begin(), t.sizes().end())) +
                " is not a per-channel bias of '" + layer->name() + "'");
  snn::Tensor& bias = conv ? conv->bias() : linear->bias();
  if (bias.empty()) bias = snn::Tensor({channels}, 0.0f);
  const std::vector<float> add = to_floats(t.numel() == 1 ? t.reshape({1}).expand({channels}) : t);
  for (int64_t c = 0; c < channels; ++c) bias[c] += add[size_t(c)];
  ++gen_[size_t(node)];
  if (report_) report_->notes.push_back("constant added after '" + layer->name() + "' folded into its bias");
  return Val::activation(new_act(node));
}

// A QCFS-like submodule: thresh (or up) is θ (one value, or one per channel), L the number of levels.
void Interpreter::qcfs_module(Node* n, Frame& f, const c10::intrusive_ptr<c10::ivalue::Object>& obj, const Val& x) {
  const auto cls = obj->type();
  const std::string cname = cls->name() ? cls->name()->name() : "?";
  const std::string path = module_path(obj);
  const std::string who = "module '" + path + "' (" + cname + ")";
  const char* tname = cls->hasAttribute("thresh") ? "thresh" : cls->hasAttribute("up") ? "up" : nullptr;
  if (!tname)
    fail(n, who + " is named like a QCFS activation but has no parameter 'thresh' or 'up' (its threshold)");
  if (!cls->hasAttribute("L"))
    fail(n, who + " is named like a QCFS activation but has no integer attribute 'L' (its number of levels); a traced "
                  "model keeps only parameters and buffers, so export QCFS models with torch.jit.script");
  const Val tv = Val::constant(obj->getAttr(tname));
  const Val lv = Val::constant(obj->getAttr("L"));
  const int64_t levels = as_int(lv, "the QCFS level count L");
  if (levels <= 0) fail(n, who + ": L must be positive, got " + std::to_string(levels));
  std::vector<float> theta;
  if (tv.iv.isTensor()) {
    theta = to_floats(tv.iv.toTensor());
  } else {
    theta = {float(as_double(tv, "the QCFS threshold"))};
  }
  const int node = node_of(n, x, "the QCFS input");
  const int64_t channels = net_.output_shape(node)[0];
  if (theta.size() != 1 && int64_t(theta.size()) != channels)
    fail(n, who + ": '" + tname + "' has " + std::to_string(theta.size()) + " values; expected 1 or " + std::to_string(channels));
  std::string name = path.empty() ? std::string("qcfs") : path;
  for (int k = 1; names_.count(name); ++k) name = (path.empty() ? std::string("qcfs") : path) + "_" + std::to_string(k);
  names_.insert(name);
  if (report_)
    report_->notes.push_back(who + ": QCFS activation, L = " + std::to_string(levels) + ", theta = " +
                             (theta.size() == 1 ? num(theta[0]) : std::to_string(theta.size()) + " per-channel values"));
  const int first_new_node = net_.size();
  Val out = neuron(n, x, snn::SourceActivation::QCFS, std::move(theta), int(levels), name);
  if (reference_mode()) {  // the module's own forward on the check images
    torch::jit::Stack stack{c10::IValue(obj), concrete(x)};
    try {
      cls->getMethod("forward").run(stack);
    } catch (const c10::Error& e) {
      const std::string msg = e.what_without_backtrace();
      fail(n, who + ": LibTorch cannot run it on the check images: " + msg.substr(0, msg.find('\n')));
    }
    if (!stack.empty() && stack.back().isTensor()) out.real = stack.back().toTensor();
    record_references(out, first_new_node, gen_);
  }
  set_outputs(n, f, {std::move(out)});
}

}  // namespace snn::conversion::detail
