// Lowering of weight, pooling and upsampling ops to layers (lowering.hpp).
#include <cmath>
#include <sstream>

#include "lowering.hpp"
#include "snn/conversion/batchnorm.hpp"
#include "snn/error.hpp"
#include "snn/layers/all.hpp"

namespace snn::conversion::detail {

namespace {

std::string ints(const std::vector<int64_t>& v) { return snn::to_string(snn::Shape(v.begin(), v.end())); }

std::vector<float> floats_of(const OpConstant& c) { return c.tensor().values(); }

// Symmetric padding [top, left, bottom, right] -> (pad_h, pad_w); asymmetric is refused by the caller.
bool symmetric(const std::vector<int64_t>& p) { return p.size() == 4 && p[0] == p[2] && p[1] == p[3]; }

std::vector<int64_t> pair(const OpNode& n, const std::string& key, std::vector<int64_t> fallback) {
  std::vector<int64_t> v = n.get_ints(key, fallback);
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

std::vector<int64_t> padding4(const OpNode& n) {
  std::vector<int64_t> p = n.get_ints("padding", {0, 0, 0, 0});
  if (p.size() == 1) p = {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) p = {p[0], p[1], p[0], p[1]};
  return p;
}

}  // namespace

void Lowering::conv2d(const OpNode& n) {
  const OpConstant& w = constant(n, 1, "the convolution weight");
  if (w.shape.size() != 4) fail(n, "only 2-D convolutions are supported (the weight is " + snn::to_string(w.shape) + ")");
  const auto stride = pair(n, "stride", {1, 1}), dilation = pair(n, "dilation", {1, 1}), pad = padding4(n);
  if (dilation[0] != 1 || dilation[1] != 1) fail(n, "dilated convolutions (dilation " + ints(dilation) + ") are not supported");
  if (!symmetric(pad)) fail(n, "asymmetric padding " + ints(pad) + " (top, left, bottom, right) is not supported");
  const int64_t groups = n.get_int("groups", 1);
  if (groups < 1 || stride[0] < 1 || stride[1] < 1) fail(n, "stride " + ints(stride) + " / groups " + std::to_string(groups));
  const int x = node_of(n, 0, "the convolution input");
  snn::Conv2dSpec spec;
  spec.out_channels = w.shape[0];
  spec.in_channels = w.shape[1] * groups;
  spec.kernel_h = w.shape[2];
  spec.kernel_w = w.shape[3];
  spec.stride_h = stride[0];
  spec.stride_w = stride[1];
  spec.pad_h = pad[0];
  spec.pad_w = pad[1];
  spec.groups = groups;
  snn::Tensor bias;
  if (has_input(n, 2)) bias = constant(n, 2, "the convolution bias").tensor().reshaped({spec.out_channels});
  auto layer = std::make_unique<snn::Conv2d>(layer_name(n, "conv"), spec, w.tensor(), std::move(bias));
  set(n, 0, node_val(add_layer(n, std::move(layer), {x}, n.outputs[0])));
}

// Folded into the conv/linear before it when this is its only reader; else a per-channel affine layer.
void Lowering::batch_norm(const OpNode& n) {
  BatchNormParams p;
  if (has_input(n, 1)) p.gamma = floats_of(constant(n, 1, "the batch norm weight"));
  if (has_input(n, 2)) p.beta = floats_of(constant(n, 2, "the batch norm bias"));
  p.mean = floats_of(constant(n, 3, "the batch norm running mean"));
  p.var = floats_of(constant(n, 4, "the batch norm running variance"));
  p.eps = n.get_float("eps", 1e-5);
  const std::string bn = n.scope.empty() ? n.name : n.scope;
  const Val x = in(n, 0);
  if (snn::Layer* l = foldable(x, n.inputs[0])) {
    if (auto* conv = dynamic_cast<snn::Conv2d*>(l)) fold_batchnorm(*conv, p);
    else fold_batchnorm(static_cast<snn::Linear&>(*l), p);
    bind(x.node, n.outputs[0]);
    ++report_->batchnorms_folded;
    report_->notes.push_back("batch norm '" + bn + "' folded into '" + l->name() + "'");
    return set(n, 0, x);
  }
  const int node = node_of(n, 0, "the batch norm input");
  const snn::Shape s = net_.output_shape(node);
  if (s.empty() || int64_t(p.mean.size()) != s[0])
    fail(n, "batch norm of " + std::to_string(p.mean.size()) + " channels on a " + snn::to_string(s) + " input");
  auto affine = std::make_unique<snn::ChannelAffine>(
      snn::ChannelAffine::from_batch_norm(layer_name(n, "bn"), p.mean, p.var, p.gamma, p.beta, p.eps));
  report_->notes.push_back("batch norm '" + bn + "' kept as a per-channel affine layer (nothing before it to fold into)");
  set(n, 0, node_val(add_layer(n, std::move(affine), {node}, n.outputs[0])));
}

void Lowering::linear(const OpNode& n) {
  const OpConstant& w = constant(n, 1, "the linear weight");
  if (w.shape.size() != 2) fail(n, "linear weight of shape " + snn::to_string(w.shape));
  const int x = node_of(n, 0, "the linear layer's input");
  const snn::Shape s = net_.output_shape(x);
  if (s.size() != 1)
    fail(n, "linear layer applied to a " + snn::to_string(s) + " activation", "flatten the activation first");
  snn::Tensor bias;
  if (has_input(n, 2)) {
    bias = constant(n, 2, "the linear bias").tensor();
    if (bias.numel() != w.shape[0]) fail(n, "bias of " + std::to_string(bias.numel()) + " values for " + std::to_string(w.shape[0]) + " outputs");
    bias = bias.reshaped({w.shape[0]});
  }
  auto layer = std::make_unique<snn::Linear>(layer_name(n, "linear"), w.tensor(), std::move(bias));
  set(n, 0, node_val(add_layer(n, std::move(layer), {x}, n.outputs[0])));
}

// x @ W with W constant [in, out]: a linear layer with weight Wᵀ.
void Lowering::matmul(const OpNode& n) {
  if (!is_const(n, 1) || is_const(n, 0))
    fail(n, "matrix product of two activations, or of a constant by an activation", "snnc supports x @ W with a weight W");
  const OpConstant& w = constant(n, 1, "the matrix");
  if (w.shape.size() != 2) fail(n, "matrix product with a " + snn::to_string(w.shape) + " constant");
  const int x = node_of(n, 0, "the matrix product's input");
  if (net_.output_shape(x).size() != 1) fail(n, "matrix product of a " + snn::to_string(net_.output_shape(x)) + " activation");
  auto layer = std::make_unique<snn::Linear>(layer_name(n, "linear"), transpose2d(w).tensor());
  set(n, 0, node_val(add_layer(n, std::move(layer), {x}, n.outputs[0])));
}

void Lowering::pool(const OpNode& n, bool max) {
  const int x = node_of(n, 0, "the pooling input");
  const snn::Shape s = net_.output_shape(x);
  if (s.size() != 3) fail(n, "2-D pooling of a " + snn::to_string(s) + " activation (expects [C, H, W])");
  const auto kernel = pair(n, "kernel", {});
  if (kernel.size() != 2) fail(n, "pooling without a 2-D kernel size");
  auto stride = pair(n, "stride", kernel);
  if (stride.empty()) stride = kernel;
  const auto pad = padding4(n);
  if (!symmetric(pad)) fail(n, "asymmetric pooling padding " + ints(pad) + " is not supported");
  snn::PoolSpec spec{kernel[0], kernel[1], stride[0], stride[1], pad[0], pad[1]};
  spec.ceil_mode = n.get_int("ceil_mode", 0) != 0;
  std::unique_ptr<snn::Layer> layer;
  if (max) {
    const auto dil = pair(n, "dilation", {1, 1});
    if (dil[0] != 1 || dil[1] != 1) fail(n, "max pooling with dilation " + ints(dil) + " is not supported");
    layer = std::make_unique<snn::MaxPool2d>(layer_name(n, "maxpool"), spec);
    ++report_->max_pools;
  } else {
    spec.count_include_pad = n.get_int("count_include_pad", 1) != 0;
    layer = std::make_unique<snn::AvgPool2d>(layer_name(n, "avgpool"), spec);
  }
  set(n, 0, node_val(add_layer(n, std::move(layer), {x}, n.outputs[0])));
}

// An ordinary average pool when the sizes divide (the same windows, summed in the same order), else
// PyTorch's uneven adaptive windows.
void Lowering::adaptive_avg_pool(const OpNode& n) {
  const int x = node_of(n, 0, "the pooling input");
  const snn::Shape s = net_.output_shape(x);
  if (s.size() != 3) fail(n, "adaptive pooling of a " + snn::to_string(s) + " activation (expects [C, H, W])");
  auto out = pair(n, "output_size", {});
  if (out.size() != 2 || out[0] <= 0 || out[1] <= 0) fail(n, "adaptive average pooling to " + ints(out));
  if (out[0] == s[1] && out[1] == s[2]) return set(n, 0, node_val(x));
  std::unique_ptr<snn::Layer> layer;
  if (s[1] % out[0] == 0 && s[2] % out[1] == 0) {
    const int64_t kh = s[1] / out[0], kw = s[2] / out[1];
    layer = std::make_unique<snn::AvgPool2d>(layer_name(n, "avgpool"), snn::PoolSpec{kh, kw, kh, kw, 0, 0});
  } else {
    layer = std::make_unique<snn::AdaptiveAvgPool2d>(layer_name(n, "avgpool"), out[0], out[1]);
  }
  set(n, 0, node_val(add_layer(n, std::move(layer), {x}, n.outputs[0])));
}

// mean over H and W: global average pooling (then a flatten unless keepdim).
void Lowering::mean(const OpNode& n) {
  const int r = rank(n, 0);
  std::vector<int64_t> dims;
  for (int64_t d : n.get_ints("dims")) dims.push_back(dim_arg(n, d, r));
  std::sort(dims.begin(), dims.end());
  const int x = node_of(n, 0, "the mean input");
  const snn::Shape s = net_.output_shape(x);
  if (s.size() != 3 || dims != std::vector<int64_t>{2, 3})
    fail(n, "mean over dims " + ints(n.get_ints("dims")) + " of a " + snn::to_string(s) + " activation",
         "only global average pooling (mean over dims 2 and 3) is supported");
  auto layer = std::make_unique<snn::AvgPool2d>(layer_name(n, "avgpool"), snn::PoolSpec{s[1], s[2], s[1], s[2], 0, 0});
  // Without keepdim the pool's [C, 1, 1] holds the mean's [C] values: both are checked against them.
  const int pooled = add_layer(n, std::move(layer), {x}, n.outputs[0]);
  if (n.get_int("keepdim", 0)) return set(n, 0, node_val(pooled));
  auto flat = std::make_unique<snn::Flatten>(layer_name(n, "flatten"));
  set(n, 0, node_val(add_layer(n, std::move(flat), {pooled}, n.outputs[0])));
}

// PyTorch's nearest rule (upsample.hpp): scale = 1/factor when a factor was given, else in/out.
void Lowering::upsample(const OpNode& n) {
  const int x = node_of(n, 0, "the upsampling input");
  const snn::Shape s = net_.output_shape(x);
  if (s.size() != 3) fail(n, "2-D upsampling of a " + snn::to_string(s) + " activation (expects [C, H, W])");
  const auto out = pair(n, "output_size", {});
  const auto scales = n.get_floats("scales", {0.0, 0.0});
  if (out.size() != 2 || out[0] <= 0 || out[1] <= 0) fail(n, "upsampling to " + ints(out));
  auto scale = [&](size_t i) {
    return i < scales.size() && scales[i] > 0.0 ? float(1.0 / scales[i]) : float(s[1 + i]) / float(out[i]);
  };
  snn::UpsampleSpec spec{out[0], out[1], scale(0), scale(1), n.get_int("exact", 0) != 0};
  auto layer = std::make_unique<snn::UpsampleNearest>(layer_name(n, "upsample"), spec);
  auto identity = [](const std::vector<int64_t>& idx) {
    for (size_t i = 0; i < idx.size(); ++i)
      if (idx[i] != int64_t(i)) return false;
    return true;
  };
  if (out[0] == s[1] && out[1] == s[2] && identity(layer->source_rows(s[1])) && identity(layer->source_cols(s[2])))
    return set(n, 0, node_val(x));
  set(n, 0, node_val(add_layer(n, std::move(layer), {x}, n.outputs[0])));
}

}  // namespace snn::conversion::detail
