#include "snn/tensor.hpp"

#include "snn/memory.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "snn/checked_math.hpp"
#include "snn/error.hpp"

namespace snn {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) require(d >= 0, "negative dimension in shape " + to_string(shape));
  for (int64_t d : shape) {
    if (d == 0) return 0;
    require(d <= kMaxElements / n, "shape " + to_string(shape) + " has more than 2^40 elements");
    n *= d;
  }
  return n;
}

std::string to_string(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

Tensor::Tensor(Shape shape, float fill) : shape_(std::move(shape)) {
  data_.assign(static_cast<size_t>(numel_of(shape_)), fill);
}

Tensor::Tensor(Shape shape, std::vector<float> values) : shape_(std::move(shape)), data_(std::move(values)) {
  require(static_cast<int64_t>(data_.size()) == numel_of(shape_),
          "tensor of shape " + to_string(shape_) + " given " + std::to_string(data_.size()) + " values");
}

int64_t Tensor::dim(int i) const {
  int r = rank();
  if (i < 0) i += r;
  require(i >= 0 && i < r, "dimension " + std::to_string(i) + " out of range for shape " + to_string(shape_));
  return shape_[static_cast<size_t>(i)];
}

void Tensor::reshape(Shape shape) {
  require(numel_of(shape) == numel(),
          "cannot reshape " + to_string(shape_) + " to " + to_string(shape));
  shape_ = std::move(shape);
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.reshape(std::move(shape));
  return t;
}

void Tensor::resize(Shape shape) {
  const size_t n = static_cast<size_t>(numel_of(shape));
  if (n > data_.capacity() && n * sizeof(float) >= kHugePageAdviceBytes) {
    // A large new buffer (the simulators' outputs and states): allocated untouched, advised to huge
    // pages, then filled. The old contents need not survive (see the header).
    std::vector<float> fresh;
    fresh.reserve(n);
    advise_huge_pages(fresh.data(), n * sizeof(float));
    data_.swap(fresh);
  }
  data_.resize(n);
  shape_ = std::move(shape);
}

void Tensor::fill(float v) { std::fill(data_.begin(), data_.end(), v); }

Tensor Tensor::slice0(int64_t begin, int64_t count) const {
  require(rank() >= 1 && begin >= 0 && count >= 0 && begin + count <= shape_[0],
          "slice [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ") out of range for " +
              to_string(shape_));
  Shape s = shape_;
  s[0] = count;
  int64_t inner = shape_[0] ? numel() / shape_[0] : 0;
  return Tensor(s, std::vector<float>(data_.begin() + begin * inner, data_.begin() + (begin + count) * inner));
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  require(a.shape() == b.shape(), "max_abs_diff: shapes " + to_string(a.shape()) + " and " + to_string(b.shape()));
  float m = 0.0f;
  for (int64_t i = 0; i < a.numel(); ++i) {
    float d = std::fabs(a[i] - b[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace snn
