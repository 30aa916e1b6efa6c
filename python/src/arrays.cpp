#include "arrays.hpp"

#include <algorithm>

#include "arguments.hpp"
#include "snn/dataset.hpp"
#include "snn/image_checks.hpp"

namespace snnc_py {

namespace {
std::string shape_text(const py::array& a) {
  std::string s = "[";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + "]";
}
std::string expected_text(const snn::Shape& sample) {
  if (sample.empty()) return "[N, C, H, W]";
  std::string s = "[N";
  for (int64_t d : sample) s += ", " + std::to_string(d);
  return s + "]";
}
}  // namespace

ImageArray::ImageArray(const py::handle& images, const snn::Shape& sample_shape, const std::string& argument)
    : argument_(argument) {
  py::array a = py::array::ensure(images);
  const bool bytes = a && a.dtype().is(py::dtype::of<uint8_t>());
  const bool floats = a && a.dtype().is(py::dtype::of<float>());
  bool shape_ok = a && a.ndim() == 4 && a.shape(0) > 0;
  for (size_t i = 0; shape_ok && i < sample_shape.size(); ++i) shape_ok = a.shape(py::ssize_t(i) + 1) == sample_shape[i];
  if (!(bytes || floats) || !shape_ok) {
    const std::string got = a ? std::string(py::str(a.dtype())) + " array of shape " + shape_text(a)
                              : std::string(py::str(py::type::of(images).attr("__name__")));
    const std::string problem = argument + ": expected a uint8 or float32 array of shape " +
                                expected_text(sample_shape) + " (N > 0), got " + got;
    if (!a) raise_argument_type_error(problem);
    raise_argument_error(problem);
  }
  // Contiguous as it is: no copy; otherwise one C-ordered copy.
  if (bytes)
    array_ = py::array_t<uint8_t, py::array::c_style>::ensure(a);
  else
    array_ = py::array_t<float, py::array::c_style>::ensure(a);
  if (!array_) raise_argument_error(argument + ": could not read the array");
  bytes_ = bytes;
  data_ = array_.data();
  count_ = int64_t(array_.shape(0));
  sample_shape_ = {int64_t(array_.shape(1)), int64_t(array_.shape(2)), int64_t(array_.shape(3))};
  per_image_ = snn::numel_of(sample_shape_);
  // As the dataset readers refuse them: a NaN or infinite pixel would give silently wrong predictions.
  if (!bytes_) snn::check_finite_pixels(static_cast<const float*>(data_), count_ * per_image_, per_image_, argument);
}

void ImageArray::warn_about_range(const snn::Preprocessing& model) const {
  if (!bytes_) warn_about_pixel_range(static_cast<const float*>(data_), count_ * per_image_, model, argument_);
}

snn::Tensor ImageArray::batch(int64_t begin, int64_t count) const {
  snn::Shape s = {count};
  s.insert(s.end(), sample_shape_.begin(), sample_shape_.end());
  snn::Tensor t(s);
  const size_t n = size_t(count * per_image_), offset = size_t(begin * per_image_);
  if (bytes_) {
    const uint8_t* src = static_cast<const uint8_t*>(data_) + offset;
    // Divide, as the dataset readers do (bit-identical to PyTorch's x / 255).
    for (size_t i = 0; i < n; ++i) t[int64_t(i)] = static_cast<float>(src[i]) / 255.0f;
  } else {
    const float* src = static_cast<const float*>(data_) + offset;
    std::copy(src, src + n, t.data());
  }
  return t;
}

std::vector<int32_t> labels_from(const py::handle& labels, int64_t expected, const std::string& argument) {
  py::array a = py::array::ensure(labels);
  if (!a || a.ndim() != 1 || (a.dtype().kind() != 'i' && a.dtype().kind() != 'u') || a.shape(0) != expected) {
    const std::string got = a ? std::string(py::str(a.dtype())) + " array of shape " + shape_text(a) : "something else";
    const std::string problem = argument + ": expected an integer array of shape [" + std::to_string(expected) +
                                "] (one label per image), got " + got;
    if (!a) raise_argument_type_error(problem);
    raise_argument_error(problem);
  }
  const auto values = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  std::vector<int32_t> out(static_cast<size_t>(expected));
  for (int64_t i = 0; i < expected; ++i) {
    const int64_t v = values.data()[i];
    if (v < 0 || v >= snn::kMaxClasses)
      raise_argument_error(argument + ": label " + std::to_string(v) + " of image " + std::to_string(i) +
                           " is outside [0, " + std::to_string(snn::kMaxClasses) + ")");
    out[size_t(i)] = int32_t(v);
  }
  return out;
}

py::array_t<float> to_numpy(snn::Tensor&& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  return to_numpy(std::move(t.values()), shape);
}

template <class T>
py::array_t<T> to_numpy(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owned->data(), owner);
}
template py::array_t<float> to_numpy(std::vector<float>&&, std::vector<py::ssize_t>);
template py::array_t<double> to_numpy(std::vector<double>&&, std::vector<py::ssize_t>);
template py::array_t<int32_t> to_numpy(std::vector<int32_t>&&, std::vector<py::ssize_t>);
template py::array_t<int64_t> to_numpy(std::vector<int64_t>&&, std::vector<py::ssize_t>);

py::array_t<double> rows_to_numpy(const std::vector<std::vector<double>>& rows, int64_t columns) {
  std::vector<double> flat;
  flat.reserve(rows.size() * size_t(columns));
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return to_numpy(std::move(flat), {py::ssize_t(rows.size()), py::ssize_t(columns)});
}

}  // namespace snnc_py
