// ElementwiseFunction and fit_activation (see elementwise.hpp).
#include "elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "snn/error.hpp"

namespace snn::conversion::detail {

namespace {

using Op = ElementwiseFunction::Op;
constexpr double kInf = std::numeric_limits<double>::infinity();

const char* op_name(Op op) {
  switch (op) {
    case Op::Input: return "x";
    case Op::Const: return "const";
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    case Op::Div: return "div";
    case Op::Max: return "max";
    case Op::Min: return "min";
    case Op::Floor: return "floor";
    case Op::Ceil: return "ceil";
    case Op::Round: return "round";
    case Op::Neg: return "neg";
    case Op::Clamp: return "clamp";
  }
  return "?";
}

}  // namespace

ElementwiseFunction::ElementwiseFunction() { terms_.push_back(Term{}); }

int ElementwiseFunction::constant(std::vector<double> values) {
  require(!values.empty(), "an elementwise constant without values");
  channels_ = std::max<int64_t>(channels_, int64_t(values.size()));
  Term t;
  t.op = Op::Const;
  t.values = std::move(values);
  terms_.push_back(std::move(t));
  return int(terms_.size()) - 1;
}

int ElementwiseFunction::unary(Op op, int a) {
  Term t;
  t.op = op;
  t.a = a;
  terms_.push_back(t);
  return int(terms_.size()) - 1;
}

int ElementwiseFunction::binary(Op op, int a, int b) {
  Term t;
  t.op = op;
  t.a = a;
  t.b = b;
  terms_.push_back(t);
  return int(terms_.size()) - 1;
}

int ElementwiseFunction::clamp(int a, double lo, double hi) {
  Term t;
  t.op = Op::Clamp;
  t.a = a;
  t.lo = lo;
  t.hi = hi;
  terms_.push_back(t);
  return int(terms_.size()) - 1;
}

int ElementwiseFunction::merge(const ElementwiseFunction& other, int other_term) {
  if (&other == this) return other_term;
  const int offset = int(terms_.size()) - 1;  // other's input (term 0) is ours
  for (size_t i = 1; i < other.terms_.size(); ++i) {
    Term t = other.terms_[i];
    if (t.a > 0) t.a += offset;
    if (t.b > 0) t.b += offset;
    terms_.push_back(std::move(t));
  }
  channels_ = std::max(channels_, other.channels_);
  return other_term == 0 ? 0 : other_term + offset;
}

double ElementwiseFunction::eval(int out, double x, int64_t channel, int pinned, double pinned_value) const {
  std::vector<double> v(size_t(out) + 1, 0.0);
  for (int i = 0; i <= out; ++i) {
    const Term& t = terms_[size_t(i)];
    const double a = t.a >= 0 ? v[size_t(t.a)] : 0.0, b = t.b >= 0 ? v[size_t(t.b)] : 0.0;
    double r = 0.0;
    switch (t.op) {
      case Op::Input: r = x; break;
      case Op::Const: r = t.values.size() == 1 ? t.values[0] : t.values[size_t(channel)]; break;
      case Op::Add: r = a + b; break;
      case Op::Sub: r = a - b; break;
      case Op::Mul: r = a * b; break;
      case Op::Div: r = a / b; break;
      case Op::Max: r = std::max(a, b); break;
      case Op::Min: r = std::min(a, b); break;
      case Op::Floor: r = std::floor(a); break;
      case Op::Ceil: r = std::ceil(a); break;
      case Op::Round: r = std::nearbyint(a); break;  // half to even, as torch.round
      case Op::Neg: r = -a; break;
      case Op::Clamp: r = std::min(std::max(a, t.lo), t.hi); break;
    }
    v[size_t(i)] = i == pinned ? pinned_value : r;
  }
  return v[size_t(out)];
}

bool ElementwiseFunction::affine_only(int out) const { return kinds(out)[size_t(out)] <= 1; }

std::vector<int> ElementwiseFunction::kinds(int out) const {
  // A term is affine in x when it is x, a constant, ± of affine terms, or × ÷ of an affine term by a
  // constant-only term.
  std::vector<int> kind(size_t(out) + 1, 0);  // 0 constant, 1 affine in x, 2 other
  for (int i = 0; i <= out; ++i) {
    const Term& t = terms_[size_t(i)];
    const int a = t.a >= 0 ? kind[size_t(t.a)] : 0, b = t.b >= 0 ? kind[size_t(t.b)] : 0;
    int k = 2;
    if (t.op == Op::Input) k = 1;
    else if (t.op == Op::Const) k = 0;
    else if (t.op == Op::Add || t.op == Op::Sub) k = std::max(a, b);
    else if (t.op == Op::Mul) k = (a == 0 || b == 0) ? std::max(a, b) : 2;
    else if (t.op == Op::Div) k = b == 0 ? a : 2;
    else if (t.op == Op::Neg) k = a;
    else k = (a == 0 && (t.b < 0 || b == 0)) ? 0 : 2;
    kind[size_t(i)] = k;
  }
  return kind;
}

int ElementwiseFunction::affine_boundary(int out) const {
  const std::vector<int> kind = kinds(out);
  if (kind[size_t(out)] != 2) return -1;
  int boundary = -1;
  for (int i = 1; i <= out; ++i) {
    const Term& t = terms_[size_t(i)];
    if (kind[size_t(i)] != 2) continue;
    for (int in : {t.a, t.b}) {
      if (in < 0 || kind[size_t(in)] != 1) continue;  // x-dependent affine terms read by a non-affine one
      if (boundary >= 0 && boundary != in) return -1;
      boundary = in;
    }
  }
  if (boundary < 0) return -1;
  // x must reach the non-affine part only through the boundary: no other affine term is read by it
  // (checked above), and the boundary is not x itself composed with nothing (then there is no affine map).
  return boundary;
}

std::string ElementwiseFunction::describe(int out) const {
  std::ostringstream os;
  bool first = true;
  for (int i = 1; i <= out; ++i) {
    if (terms_[size_t(i)].op == Op::Const) continue;
    os << (first ? "" : ", ") << op_name(terms_[size_t(i)].op);
    first = false;
  }
  return first ? std::string("identity") : os.str();
}

}  // namespace snn::conversion::detail
