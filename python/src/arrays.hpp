// NumPy at the boundary: images and labels coming in, results going out.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "snn/network.hpp"
#include "snn/tensor.hpp"

namespace snnc_py {
namespace py = pybind11;

// Images handed in from Python: a uint8 or float32 NumPy array [N, C, H, W] whose [C, H, W] is the
// network's input shape (uint8 pixels are scaled to [0, 1] as the dataset readers scale them; float32
// values are used as they are, before the network's normalisation). The array is read in place, batch by
// batch: nothing is copied whole unless it is not C-contiguous. Anything else is a ValueError that names
// the argument and the expected shape (snnc.ArgumentError), and a NaN or infinite pixel is refused as the
// dataset readers refuse it (snnc.Error).
class ImageArray {
 public:
  // sample_shape empty: any [C, H, W].
  ImageArray(const py::handle& images, const snn::Shape& sample_shape, const std::string& argument);
  int64_t size() const { return count_; }
  const snn::Shape& sample_shape() const { return sample_shape_; }
  // Images [begin, begin + count) as a float tensor. Needs no GIL (the array is kept alive by this object).
  snn::Tensor batch(int64_t begin, int64_t count) const;
  // A UserWarning when float pixels are far outside the range the model's normalisation is made for.
  void warn_about_range(const snn::Preprocessing& model) const;

 private:
  py::array array_;
  const void* data_ = nullptr;
  bool bytes_ = false;
  int64_t count_ = 0, per_image_ = 0;
  snn::Shape sample_shape_;
  std::string argument_;
};

// Integer class labels [N] (any integer dtype), each in [0, 2^20).
std::vector<int32_t> labels_from(const py::handle& labels, int64_t expected, const std::string& argument);

// Arrays that own a C++ buffer, without copying it.
py::array_t<float> to_numpy(snn::Tensor&& t);
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& values, std::vector<py::ssize_t> shape);
// Rows of equal length as a 2-D array [rows, columns] (columns given for the case of no rows).
py::array_t<double> rows_to_numpy(const std::vector<std::vector<double>>& rows, int64_t columns);

}  // namespace snnc_py
