// Elementwise functions of one activation, and what they are.
//
// Exporters spell an activation as ops: ReLU as relu, max(x, 0) or clamp_min; ReLU6 as clamp or
// hardtanh; QCFS as div, clamp, mul, add, floor, sub, detach, add, div, mul (its straight-through floor
// included); a batch norm after a concatenation as mul and add. Rather than matching spellings, the
// lowering records every run of elementwise ops hanging off one activation as an ElementwiseFunction,
// evaluates it per channel on probe inputs and recognises what it computes: the identity, an affine map
// a·x + b (foldable into the layer before it), ReLU, clip(0, θ), QCFS(θ, L) — or those activations of an
// affine map of the input (a decomposed batch norm followed by ReLU). Anything else is refused.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace snn::conversion::detail {

class ElementwiseFunction {
 public:
  enum class Op { Input, Const, Add, Sub, Mul, Div, Max, Min, Floor, Ceil, Round, Neg, Clamp };
  ElementwiseFunction();  // term 0 is the input x

  int input() const { return 0; }
  // A constant: one value, or one per channel.
  int constant(std::vector<double> values);
  int unary(Op op, int a);
  int binary(Op op, int a, int b);
  int clamp(int a, double lo, double hi);  // ±infinity: unbounded
  // Copies the terms of `other` (the same input) into this function; returns the index `other_term` has here.
  int merge(const ElementwiseFunction& other, int other_term);

  // Value of term `out` for input x in channel c (a constant with one value serves every channel);
  // `pinned` >= 0: that term takes `pinned_value` instead (evaluating h of f = h(u) at u = pinned_value).
  double eval(int out, double x, int64_t channel, int pinned = -1, double pinned_value = 0.0) const;
  bool affine_only(int out) const;  // no op but + − × ÷ by constants on the way to `out`
  // The one term u that is affine in x and read by non-affine terms on the way to `out` (f = h(u)),
  // when there is exactly one and x reaches `out` only through it; -1 otherwise.
  int affine_boundary(int out) const;
  std::string describe(int out) const;  // the ops, e.g. "div, clamp, mul, add, floor, sub, add, div, mul"
  int64_t channels() const { return channels_; }  // largest per-channel constant size (1 if none)

 private:
  struct Term {
    Op op = Op::Input;
    int a = -1, b = -1;
    std::vector<double> values;  // Const
    double lo = 0, hi = 0;       // Clamp
  };
  std::vector<Term> terms_;
  int64_t channels_ = 1;
  std::vector<int> kinds(int out) const;  // per term: 0 constant, 1 affine in x, 2 other
};

// What a function computes, per channel.
struct ActivationFit {
  enum class Kind { Identity, Affine, ReLU, Clip, QCFS, Unknown };
  Kind kind = Kind::Unknown;
  // Affine (alone, or before the activation: the activation reads scale·x + shift).
  std::vector<float> scale, shift;  // per channel; empty: none
  std::vector<float> theta;         // Clip, QCFS: one value, or one per channel
  int levels = 0;                   // QCFS
  int affine_term = -1;             // with an affine map before the activation: the term it ends at
  std::string why;                  // Unknown: what did not fit, e.g. "f(-1) = -0.01: not 0 below 0"
  bool has_affine() const { return !scale.empty(); }
};

// Recognises f (term `out`) over `channels` channels (f's own per-channel constants must have 1 or that
// many values).
ActivationFit fit_activation(const ElementwiseFunction& f, int out, int64_t channels);

}  // namespace snn::conversion::detail
