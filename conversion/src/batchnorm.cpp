#include "snn/conversion/batchnorm.hpp"

#include <cmath>

#include "snn/error.hpp"

namespace snn::conversion {

namespace {

// Scales every output channel's weights (rows of `per_channel` consecutive values) and rewrites the bias.
void fold(const std::string& layer, Tensor& weight, Tensor& bias, int64_t channels, const BatchNormParams& bn) {
  auto check = [&](const std::vector<float>& v, const char* what, bool optional) {
    if (optional && v.empty()) return;
    require(int64_t(v.size()) == channels, "batch norm folded into layer '" + layer + "': " + what + " has " +
                                               std::to_string(v.size()) + " values, the layer has " +
                                               std::to_string(channels) + " output channels");
  };
  check(bn.mean, "running_mean", false);
  check(bn.var, "running_var", false);
  check(bn.gamma, "weight (gamma)", true);
  check(bn.beta, "bias (beta)", true);
  // Check everything before touching the weights: a failed fold leaves the layer as it was.
  for (int64_t o = 0; o < channels; ++o) {
    const double denom = double(bn.var[size_t(o)]) + bn.eps;
    require(denom > 0.0 && std::isfinite(denom), "batch norm folded into layer '" + layer +
                                                     "': running_var + eps of channel " + std::to_string(o) +
                                                     " is not positive");
  }
  const int64_t per_channel = channels ? weight.numel() / channels : 0;
  Tensor new_bias({channels});
  for (int64_t o = 0; o < channels; ++o) {
    const double denom = double(bn.var[size_t(o)]) + bn.eps;
    const double gamma = bn.gamma.empty() ? 1.0 : double(bn.gamma[size_t(o)]);
    const double beta = bn.beta.empty() ? 0.0 : double(bn.beta[size_t(o)]);
    const double s = gamma / std::sqrt(denom);
    float* w = weight.data() + o * per_channel;
    for (int64_t i = 0; i < per_channel; ++i) w[i] = float(double(w[i]) * s);
    const double b = bias.empty() ? 0.0 : double(bias[o]);
    new_bias[o] = float((b - double(bn.mean[size_t(o)])) * s + beta);
  }
  bias = std::move(new_bias);
}

}  // namespace

void fold_batchnorm(snn::Conv2d& conv, const BatchNormParams& bn) {
  fold(conv.name(), conv.weight(), conv.bias(), conv.spec().out_channels, bn);
}

void fold_batchnorm(snn::Linear& linear, const BatchNormParams& bn) {
  fold(linear.name(), linear.weight(), linear.bias(), linear.out_features(), bn);
}

}  // namespace snn::conversion
