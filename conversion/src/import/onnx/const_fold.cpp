// Constant folding of ONNX ops (see const_fold.hpp).
#include "import/onnx/const_fold.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "snn/error.hpp"

namespace snn::conversion::onnx::fold {

namespace {

int64_t checked_numel(const snn::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    require(d >= 0 && d <= kMaxFolded, "dimension out of range in " + snn::to_string(shape));
    require(d == 0 || n <= kMaxFolded / d, "a folded constant of shape " + snn::to_string(shape) +
                                               " would exceed " + std::to_string(kMaxFolded) + " elements");
    n *= d;
  }
  return n;
}

OpConstant make(snn::Shape shape, bool is_int) {
  OpConstant c;
  const int64_t n = checked_numel(shape);
  c.shape = std::move(shape);
  c.is_int = is_int;
  if (is_int) c.ints.assign(size_t(n), 0);
  else c.values.assign(size_t(n), 0.0f);
  return c;
}

// double -> int64 without the undefined behaviour of an out-of-range conversion.
int64_t to_int(double v) {
  require(std::isfinite(v) && std::fabs(v) < 9.2e18, "the integer result " + std::to_string(v) + " is out of range");
  return int64_t(v);
}

double get(const OpConstant& c, int64_t i) { return c.is_int ? double(c.ints[size_t(i)]) : double(c.values[size_t(i)]); }

void copy(OpConstant& dst, int64_t di, const OpConstant& src, int64_t si) {
  if (dst.is_int) dst.ints[size_t(di)] = src.is_int ? src.ints[size_t(si)] : int64_t(src.values[size_t(si)]);
  else dst.values[size_t(di)] = src.is_int ? float(src.ints[size_t(si)]) : src.values[size_t(si)];
}

// Strides of `in` seen from a broadcast output of rank `rank` (0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const snn::Shape& in, const snn::Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const snn::Shape own = strides_of(in);
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) s[off + d] = in[d] == 1 ? 0 : own[d];
  return s;
}

// Calls f(out_index, src) for each element of `out` in order; src[k] walks strides[k] from base[k].
template <size_t K, class F>
void walk(const snn::Shape& out, const std::vector<int64_t> (&strides)[K], const int64_t (&base)[K], F f) {
  const int64_t n = numel_of(out);
  std::vector<int64_t> idx(out.size(), 0);
  int64_t src[K];
  for (size_t k = 0; k < K; ++k) src[k] = base[k];
  for (int64_t o = 0; o < n; ++o) {
    f(o, src);
    for (size_t d = out.size(); d-- > 0;) {
      ++idx[size_t(d)];
      for (size_t k = 0; k < K; ++k) src[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < K; ++k) src[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

int64_t int_op(const std::string& op, int64_t a, int64_t b) {
  if (op == "Add") return int64_t(uint64_t(a) + uint64_t(b));  // wraps like ONNX int64, no UB
  if (op == "Sub") return int64_t(uint64_t(a) - uint64_t(b));
  if (op == "Mul") return int64_t(uint64_t(a) * uint64_t(b));
  if (op == "Div" || op == "Mod") {
    require(b != 0, "integer division by zero");
    if (a == std::numeric_limits<int64_t>::min() && b == -1) return op == "Div" ? a : 0;
    return op == "Div" ? a / b : a % b;
  }
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "Greater") return a > b;
  if (op == "And") return a && b;
  if (op == "Or") return a || b;
  if (op == "Pow") return to_int(std::pow(double(a), double(b)));
  throw snn::Error("cannot fold " + op);
}

double float_op(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "Greater") return a > b;
  if (op == "And") return a != 0 && b != 0;
  if (op == "Or") return a != 0 || b != 0;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Mod") return std::fmod(a, b);
  throw snn::Error("cannot fold " + op);
}

bool is_comparison(const std::string& op) { return op == "Equal" || op == "Less" || op == "Greater" || op == "And" || op == "Or"; }

}  // namespace

int64_t to_int_checked(double v) { return to_int(v); }

int64_t bounded_numel(const snn::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > (int64_t(1) << 40) || (d != 0 && n > (int64_t(1) << 40) / d)) return -1;
    n *= d;
  }
  return n;
}

snn::Shape strides_of(const snn::Shape& shape) {
  snn::Shape s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  const int64_t r = int64_t(rank);
  require(axis >= -r && axis < r, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

snn::Shape broadcast_shape(const snn::Shape& a, const snn::Shape& b) {
  snn::Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    require(x == y || x == 1 || y == 1, "shapes " + snn::to_string(a) + " and " + snn::to_string(b) + " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

bool is_binary(const std::string& op) {
  static const char* ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater", "Pow", "And", "Or", "Mod"};
  return std::find_if(std::begin(ops), std::end(ops), [&](const char* o) { return op == o; }) != std::end(ops);
}

OpConstant binary(const std::string& op, const OpConstant& a, const OpConstant& b) {
  const snn::Shape shape = broadcast_shape(a.shape, b.shape);
  const bool ints = a.is_int && b.is_int;
  OpConstant out = make(shape, ints || is_comparison(op));
  const std::vector<int64_t> strides[2] = {broadcast_strides(a.shape, shape), broadcast_strides(b.shape, shape)};
  const int64_t base[2] = {0, 0};
  walk<2>(shape, strides, base, [&](int64_t o, const int64_t* s) {
    if (ints) out.ints[size_t(o)] = int_op(op, a.ints[size_t(s[0])], b.ints[size_t(s[1])]);
    else if (out.is_int) out.ints[size_t(o)] = to_int(float_op(op, get(a, s[0]), get(b, s[1])));
    else out.values[size_t(o)] = float(float_op(op, get(a, s[0]), get(b, s[1])));
  });
  return out;
}

bool is_unary(const std::string& op) {
  static const char* ops[] = {"Neg", "Floor", "Ceil", "Round", "Abs", "Relu", "Sqrt", "Not", "Reciprocal", "Sign", "Identity"};
  return std::find_if(std::begin(ops), std::end(ops), [&](const char* o) { return op == o; }) != std::end(ops);
}

OpConstant unary(const std::string& op, const OpConstant& a) {
  OpConstant out = a;
  auto f = [&](double v) -> double {
    if (op == "Neg") return -v;
    if (op == "Floor") return std::floor(v);
    if (op == "Ceil") return std::ceil(v);
    if (op == "Round") return std::nearbyint(v);  // half to even, as ONNX
    if (op == "Abs") return std::fabs(v);
    if (op == "Relu") return v > 0 ? v : 0;
    if (op == "Sqrt") return std::sqrt(v);
    if (op == "Not") return v == 0;
    if (op == "Reciprocal") return 1.0 / v;
    if (op == "Sign") return double((v > 0) - (v < 0));
    return v;
  };
  if (a.is_int && (op == "Sqrt" || op == "Reciprocal")) out = cast(a, false);
  for (auto& v : out.values) v = float(f(v));
  for (auto& v : out.ints) v = op == "Neg" ? int64_t(0 - uint64_t(v)) : to_int(f(double(v)));
  return out;
}

OpConstant where(const OpConstant& cond, const OpConstant& x, const OpConstant& y) {
  const snn::Shape shape = broadcast_shape(broadcast_shape(cond.shape, x.shape), y.shape);
  OpConstant out = make(shape, x.is_int && y.is_int);
  const std::vector<int64_t> strides[3] = {broadcast_strides(cond.shape, shape), broadcast_strides(x.shape, shape),
                                           broadcast_strides(y.shape, shape)};
  const int64_t base[3] = {0, 0, 0};
  walk<3>(shape, strides, base, [&](int64_t o, const int64_t* s) {
    if (get(cond, s[0]) != 0) copy(out, o, x, s[1]);
    else copy(out, o, y, s[2]);
  });
  return out;
}

OpConstant cast(const OpConstant& a, bool to_int) {
  if (a.is_int == to_int) return a;
  OpConstant out = make(a.shape, to_int);
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (to_int) {
      out.ints[size_t(i)] = fold::to_int_checked(a.values[size_t(i)]);
    } else {
      out.values[size_t(i)] = float(a.ints[size_t(i)]);
    }
  }
  return out;
}

OpConstant reshape(const OpConstant& a, snn::Shape shape) {
  require(checked_numel(shape) == a.numel(), "cannot reshape " + snn::to_string(a.shape) + " to " + snn::to_string(shape));
  OpConstant out = a;
  out.shape = std::move(shape);
  return out;
}

OpConstant transpose(const OpConstant& a, const std::vector<int64_t>& perm) {
  require(perm.size() == a.shape.size(), "perm of rank " + std::to_string(perm.size()) + " for a tensor of rank " +
                                             std::to_string(a.shape.size()));
  snn::Shape shape(perm.size());
  std::vector<int64_t> strides[1] = {std::vector<int64_t>(perm.size())};
  const snn::Shape own = strides_of(a.shape);
  std::vector<bool> seen(perm.size(), false);
  for (size_t d = 0; d < perm.size(); ++d) {
    const int64_t p = normalize_axis(perm[d], perm.size());
    require(!seen[size_t(p)], "perm repeats axis " + std::to_string(p));
    seen[size_t(p)] = true;
    shape[d] = a.shape[size_t(p)];
    strides[0][d] = own[size_t(p)];
  }
  OpConstant out = make(shape, a.is_int);
  const int64_t base[1] = {0};
  walk<1>(shape, strides, base, [&](int64_t o, const int64_t* s) { copy(out, o, a, s[0]); });
  return out;
}

OpConstant concat(const std::vector<const OpConstant*>& parts, int64_t axis) {
  require(!parts.empty(), "concat of nothing");
  const size_t rank = parts[0]->shape.size();
  const int64_t ax = normalize_axis(axis, rank);
  snn::Shape shape = parts[0]->shape;
  shape[size_t(ax)] = 0;
  bool ints = true;
  for (const OpConstant* p : parts) {
    require(p->shape.size() == rank, "concat of tensors of different ranks");
    for (size_t d = 0; d < rank; ++d)
      require(int64_t(d) == ax || p->shape[d] == shape[d], "concat of tensors whose shapes differ off the axis");
    shape[size_t(ax)] += p->shape[size_t(ax)];
    ints = ints && p->is_int;
  }
  OpConstant out = make(shape, ints);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= shape[size_t(d)];
  for (size_t d = size_t(ax) + 1; d < rank; ++d) inner *= shape[d];
  int64_t o = 0;
  for (int64_t i = 0; i < outer; ++i)
    for (const OpConstant* p : parts) {
      const int64_t block = p->shape[size_t(ax)] * inner;
      for (int64_t j = 0; j < block; ++j) copy(out, o++, *p, i * block + j);
    }
  return out;
}

OpConstant gather(const OpConstant& data, const OpConstant& indices, int64_t axis) {
  require(indices.is_int, "Gather indices must be integers");
  const int64_t ax = normalize_axis(axis, data.shape.size());
  snn::Shape shape(data.shape.begin(), data.shape.begin() + ax);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + ax + 1, data.shape.end());
  OpConstant out = make(shape, data.is_int);
  const int64_t n = data.shape[size_t(ax)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= data.shape[size_t(d)];
  for (size_t d = size_t(ax) + 1; d < data.shape.size(); ++d) inner *= data.shape[d];
  int64_t o = 0;
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t k : indices.ints) {
      require(k >= -n && k < n, "Gather index " + std::to_string(k) + " is out of range for size " + std::to_string(n));
      const int64_t src = (i * n + (k < 0 ? k + n : k)) * inner;
      for (int64_t j = 0; j < inner; ++j) copy(out, o++, data, src + j);
    }
  return out;
}

int64_t slice_bounds(int64_t dim, int64_t& start, int64_t end, int64_t step) {
  require(step != 0, "Slice step 0");
  auto adjust = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < std::numeric_limits<int64_t>::min() + dim ? lo : v + dim;
    return std::clamp(v, lo, hi);
  };
  if (step > 0) {
    start = adjust(start, 0, dim);
    end = adjust(end, 0, dim);
    return end > start ? (end - start - 1) / step + 1 : 0;
  }
  start = adjust(start, -1, dim - 1);
  end = adjust(end, -1, dim - 1);
  if (start <= end) return 0;
  return step == std::numeric_limits<int64_t>::min() ? 1 : (start - end - 1) / (-step) + 1;
}

OpConstant slice(const OpConstant& a, const std::vector<int64_t>& starts, const std::vector<int64_t>& counts,
                 const std::vector<int64_t>& steps) {
  const snn::Shape own = strides_of(a.shape);
  std::vector<int64_t> strides[1] = {std::vector<int64_t>(a.shape.size())};
  int64_t base[1] = {0};
  for (size_t d = 0; d < a.shape.size(); ++d) {
    strides[0][d] = own[d] * steps[d];
    if (counts[d] > 0) base[0] += starts[d] * own[d];
  }
  OpConstant out = make(snn::Shape(counts.begin(), counts.end()), a.is_int);
  walk<1>(out.shape, strides, base, [&](int64_t o, const int64_t* s) { copy(out, o, a, s[0]); });
  return out;
}

OpConstant expand(const OpConstant& a, const snn::Shape& shape) {
  const snn::Shape out_shape = broadcast_shape(a.shape, shape);
  OpConstant out = make(out_shape, a.is_int);
  const std::vector<int64_t> strides[1] = {broadcast_strides(a.shape, out_shape)};
  const int64_t base[1] = {0};
  walk<1>(out_shape, strides, base, [&](int64_t o, const int64_t* s) { copy(out, o, a, s[0]); });
  return out;
}

OpConstant fill(const snn::Shape& shape, const OpConstant& value) {
  require(value.numel() == 1, "ConstantOfShape value must hold one element");
  OpConstant out = make(shape, value.is_int);
  for (int64_t i = 0; i < out.numel(); ++i) copy(out, i, value, 0);
  return out;
}

OpConstant range(const OpConstant& start, const OpConstant& limit, const OpConstant& delta) {
  require(start.numel() == 1 && limit.numel() == 1 && delta.numel() == 1, "Range takes scalars");
  const double s = get(start, 0), l = get(limit, 0), d = get(delta, 0);
  require(d != 0 && std::isfinite(s) && std::isfinite(l) && std::isfinite(d), "Range with a zero or non-finite step");
  const double n = std::max(0.0, std::ceil((l - s) / d));
  require(n <= double(kMaxFolded), "Range of too many elements");
  OpConstant out = make({int64_t(n)}, start.is_int && limit.is_int && delta.is_int);
  for (int64_t i = 0; i < int64_t(n); ++i) {
    if (out.is_int) out.ints[size_t(i)] = int64_t(uint64_t(start.ints[0]) + uint64_t(i) * uint64_t(delta.ints[0]));
    else out.values[size_t(i)] = float(s + double(i) * d);
  }
  return out;
}

OpConstant reduce(const std::string& op, const OpConstant& a, std::vector<int64_t> axes, bool keepdims) {
  const size_t rank = a.shape.size();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t ax : axes) reduced[size_t(normalize_axis(ax, rank))] = true;
  snn::Shape kept = a.shape;
  for (size_t d = 0; d < rank; ++d)
    if (reduced[d]) kept[d] = 1;
  OpConstant out = make(kept, a.is_int && op != "ReduceMean");
  std::vector<double> acc(size_t(out.numel()), op == "ReduceMax" ? -INFINITY : op == "ReduceMin" ? INFINITY : op == "ReduceProd" ? 1.0 : 0.0);
  const std::vector<int64_t> strides[1] = {broadcast_strides(kept, a.shape)};
  const int64_t base[1] = {0};
  walk<1>(a.shape, strides, base, [&](int64_t i, const int64_t* s) {
    double& r = acc[size_t(s[0])];
    const double v = get(a, i);
    if (op == "ReduceMax") r = std::max(r, v);
    else if (op == "ReduceMin") r = std::min(r, v);
    else if (op == "ReduceProd") r *= v;
    else r += v;
  });
  const double count = out.numel() ? double(a.numel()) / double(out.numel()) : 1.0;
  for (size_t i = 0; i < acc.size(); ++i) {
    const double v = op == "ReduceMean" ? acc[i] / count : acc[i];
    if (out.is_int) out.ints[i] = to_int(v);
    else out.values[i] = float(v);
  }
  if (!keepdims) {
    snn::Shape s;
    for (size_t d = 0; d < rank; ++d)
      if (!reduced[d]) s.push_back(a.shape[d]);
    out.shape = s;
  }
  return out;
}

}  // namespace snn::conversion::onnx::fold
