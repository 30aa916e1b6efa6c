// snnc._core: the C++ library behind the Python package snnc (see snnc/__init__.py for the front).
#include <pybind11/pybind11.h>

#include "arguments.hpp"
#include "bindings.hpp"
#include "snn/error.hpp"
#include "snn/model_file.hpp"
#ifdef SNN_HAVE_CONVERSION
#include "snn/conversion/model_import.hpp"
#endif

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "snnc's C++ core (networks, datasets, simulation, calibration); use the snnc package.";
  // snn::Error (bad files, options, layers) arrives as snnc.Error, a RuntimeError, with snnc's message.
  const auto error = py::register_exception<snn::Error>(m, "Error", PyExc_RuntimeError);
  // Bad arguments are snnc.Errors too, and ValueError / TypeError as Python code expects.
  snnc_py::register_argument_errors(m, error);
  m.attr("__version__") = snn::snnc_version();
  snnc_py::bind_dataset(m);
  snnc_py::bind_results(m);
  snnc_py::bind_network(m);
#ifdef SNN_HAVE_CONVERSION
  snnc_py::bind_convert(m);  // .pt2 and ONNX always; TorchScript when the importer is linked in
  m.attr("has_calibration") = true;
  m.attr("has_torchscript_import") = snn::conversion::torchscript_supported();
#else
  m.attr("has_calibration") = false;
  m.attr("has_torchscript_import") = false;
#endif
}
