// The pieces of snnc._core, one file per concept: datasets, networks, results. Shared helpers here.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "snn/backend.hpp"
#include "snn/dataset.hpp"

namespace snnc_py {
namespace py = pybind11;

void bind_dataset(py::module_& m);
void bind_results(py::module_& m);
void bind_network(py::module_& m);
void bind_convert(py::module_& m);  // with snn_conversion (SNN_HAVE_CONVERSION)

// A data argument: a dataset spec string ("fashion-mnist:test", a file), an snnc.Dataset, or a pair
// (images, labels) of NumPy arrays. limit > 0 keeps the first `limit` images.
std::shared_ptr<const snn::Dataset> dataset_argument(const py::handle& data, int64_t limit, const std::string& argument);

// "cpu", "cuda" or "auto"; threads <= 0: all cores. The error names the device when it cannot run here.
std::unique_ptr<snn::Backend> open_backend(const std::string& device, int threads);

}  // namespace snnc_py
