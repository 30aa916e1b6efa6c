// snn::Tensor: a dense float32 array with an explicit shape, stored contiguously (row-major, NCHW for
// images). A value type: copying copies the data. Math is done through Eigen maps over data().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace snn {

using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
std::string to_string(const Shape& shape);  // "[2, 3, 4]"

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape, float fill = 0.0f);
  Tensor(Shape shape, std::vector<float> values);  // values.size() must equal the shape's numel

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative i counts from the back
  int64_t numel() const { return static_cast<int64_t>(data_.size()); }
  bool empty() const { return data_.empty(); }

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  std::vector<float>& values() { return data_; }
  const std::vector<float>& values() const { return data_; }
  float& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  float operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }

  // Changes the shape, keeping the data; the element count must not change.
  void reshape(Shape shape);
  Tensor reshaped(Shape shape) const;
  // Changes the shape and element count; contents are unspecified (used for output buffers).
  void resize(Shape shape);
  void fill(float v);

  // Elements [begin, begin+count) of the leading dimension, as a new tensor.
  Tensor slice0(int64_t begin, int64_t count) const;

 private:
  Shape shape_;
  std::vector<float> data_;
};

// Largest absolute elementwise difference; shapes must match.
float max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace snn
