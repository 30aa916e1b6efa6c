// Folding eval-mode batch normalisation into the convolution or linear layer before it. Per output
// channel o, with s = γ_o / √(σ²_o + ε):
//   BN(W·x + b) = γ·(W·x + b − μ)/√(σ² + ε) + β = (s·W)·x + (s·(b − μ) + β)
// so the folded layer has weights s·W_o and bias s·(b_o − μ_o) + β_o (b = 0 when the layer had none).
// Scales are computed in double; the result is exact up to float rounding of the new weights.
#pragma once
#include <vector>

#include "snn/layers/conv2d.hpp"
#include "snn/layers/linear.hpp"

namespace snn::conversion {

struct BatchNormParams {
  std::vector<float> mean, var;    // running statistics, one value per channel
  std::vector<float> gamma, beta;  // affine parameters; empty means γ = 1, β = 0 (affine=False)
  double eps = 1e-5;
};

// Throw snn::Error naming the layer when the channel counts differ or σ² + ε is not positive.
void fold_batchnorm(snn::Conv2d& conv, const BatchNormParams& bn);
void fold_batchnorm(snn::Linear& linear, const BatchNormParams& bn);

inline void fold_batchnorm(snn::Conv2d& conv, const std::vector<float>& mean, const std::vector<float>& var,
                           const std::vector<float>& gamma, const std::vector<float>& beta, double eps) {
  fold_batchnorm(conv, BatchNormParams{mean, var, gamma, beta, eps});
}
inline void fold_batchnorm(snn::Linear& linear, const std::vector<float>& mean, const std::vector<float>& var,
                           const std::vector<float>& gamma, const std::vector<float>& beta, double eps) {
  fold_batchnorm(linear, BatchNormParams{mean, var, gamma, beta, eps});
}

}  // namespace snn::conversion
