// BN folding: conv/linear with the batch norm folded in must equal conv/linear followed by the batch
// norm, computed naively in double here (not with snnc's own layers).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "snn/conversion/batchnorm.hpp"
#include "snn/error.hpp"
#include "test_util.hpp"

using namespace snn;
using snn::conversion::BatchNormParams;
using snn::conversion::fold_batchnorm;

namespace {

using snn_test::random_tensor;

std::vector<float> uniform_vec(size_t n, std::mt19937& rng, float lo, float hi) {
  return random_tensor({int64_t(n)}, rng, lo, hi).values();
}

BatchNormParams random_bn(int64_t c, std::mt19937& rng, bool affine = true) {
  BatchNormParams p;
  p.mean = uniform_vec(size_t(c), rng, -0.5f, 0.5f);
  p.var = uniform_vec(size_t(c), rng, 0.2f, 2.0f);
  if (affine) {
    p.gamma = uniform_vec(size_t(c), rng, 0.5f, 1.5f);
    p.beta = uniform_vec(size_t(c), rng, -0.3f, 0.3f);
  }
  p.eps = 1e-5;
  return p;
}

double bn_apply(double y, int64_t c, const BatchNormParams& p) {
  const double g = p.gamma.empty() ? 1.0 : p.gamma[size_t(c)];
  const double b = p.beta.empty() ? 0.0 : p.beta[size_t(c)];
  return (y - p.mean[size_t(c)]) / std::sqrt(double(p.var[size_t(c)]) + p.eps) * g + b;
}

// Direct convolution in double: x [N, C, H, W], weight [O, C/g, kh, kw].
std::vector<double> naive_conv(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dSpec& s,
                               int64_t& ho, int64_t& wo) {
  const int64_t n = x.dim(0), h = x.dim(2), wd = x.dim(3);
  ho = (h + 2 * s.pad_h - s.kernel_h) / s.stride_h + 1;
  wo = (wd + 2 * s.pad_w - s.kernel_w) / s.stride_w + 1;
  const int64_t cin_g = s.in_channels / s.groups, cout_g = s.out_channels / s.groups;
  std::vector<double> out(size_t(n * s.out_channels * ho * wo));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < s.out_channels; ++o)
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          double acc = bias.empty() ? 0.0 : bias[o];
          const int64_t g = o / cout_g;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t ky = 0; ky < s.kernel_h; ++ky)
              for (int64_t kx = 0; kx < s.kernel_w; ++kx) {
                const int64_t iy = oy * s.stride_h - s.pad_h + ky, ix = ox * s.stride_w - s.pad_w + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const int64_t c = g * cin_g + ci;
                acc += double(x[((b * s.in_channels + c) * h + iy) * wd + ix]) *
                       double(w[((o * cin_g + ci) * s.kernel_h + ky) * s.kernel_w + kx]);
              }
          out[size_t(((b * s.out_channels + o) * ho + oy) * wo + ox)] = acc;
        }
  return out;
}

}  // namespace

TEST_CASE("BN folded into a convolution equals conv followed by BN", "[batchnorm]") {
  std::mt19937 rng(7);
  const bool with_bias = GENERATE(true, false);
  const int64_t groups = GENERATE(1, 2);
  const bool affine = GENERATE(true, false);
  Conv2dSpec s{4, 6, 3, 3, 2, 1, 1, 1, groups};
  const Tensor w = random_tensor({6, 4 / groups, 3, 3}, rng, -0.5f, 0.5f);
  const Tensor b = with_bias ? random_tensor({6}, rng, -0.2f, 0.2f) : Tensor();
  const Tensor x = random_tensor({3, 4, 7, 6}, rng, -1.0f, 1.0f);
  const BatchNormParams bn = random_bn(6, rng, affine);

  int64_t ho = 0, wo = 0;
  const std::vector<double> ref = naive_conv(x, w, b, s, ho, wo);
  Conv2d conv("conv", s, w, b);
  fold_batchnorm(conv, bn);
  REQUIRE(conv.bias().numel() == 6);  // a bias is created when the conv had none
  Tensor y;
  snn_test::ann(conv, {&x}, y);
  REQUIRE(y.shape() == Shape{3, 6, ho, wo});
  double worst = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t c = (i / (ho * wo)) % 6;
    worst = std::max(worst, std::abs(double(y[i]) - bn_apply(ref[size_t(i)], c, bn)));
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("BN folded into a linear layer equals linear followed by BN", "[batchnorm]") {
  std::mt19937 rng(11);
  const bool with_bias = GENERATE(true, false);
  const Tensor w = random_tensor({5, 9}, rng, -0.5f, 0.5f);
  const Tensor b = with_bias ? random_tensor({5}, rng, -0.2f, 0.2f) : Tensor();
  const Tensor x = random_tensor({4, 9}, rng, -1.0f, 1.0f);
  const BatchNormParams bn = random_bn(5, rng);
  Linear lin("fc", w, b);
  fold_batchnorm(lin, bn.mean, bn.var, bn.gamma, bn.beta, bn.eps);  // the vector overload
  Tensor y;
  snn_test::ann(lin, {&x}, y);
  double worst = 0.0;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t o = 0; o < 5; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int64_t i = 0; i < 9; ++i) acc += double(x[n * 9 + i]) * double(w[o * 9 + i]);
      worst = std::max(worst, std::abs(double(y[n * 5 + o]) - bn_apply(acc, o, bn)));
    }
  CHECK(worst < 1e-5);
}

TEST_CASE("BN folding rejects mismatched or invalid statistics", "[batchnorm]") {
  std::mt19937 rng(3);
  Conv2d conv("conv1", Conv2dSpec{2, 3, 1, 1, 1, 1, 0, 0, 1}, random_tensor({3, 2, 1, 1}, rng, -1, 1));
  BatchNormParams bn = random_bn(4, rng);  // 4 channels for a 3-channel conv
  CHECK_THROWS_WITH(fold_batchnorm(conv, bn), Catch::Contains("conv1") && Catch::Contains("3 output channels"));
  bn = random_bn(3, rng);
  bn.var[1] = -1.0f;
  CHECK_THROWS_AS(fold_batchnorm(conv, bn), snn::Error);
  bn = random_bn(3, rng);
  bn.gamma.resize(2);
  CHECK_THROWS_AS(fold_batchnorm(conv, bn), snn::Error);
}
