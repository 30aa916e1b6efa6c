#include "python_progress.hpp"

namespace snnc_py {

PythonProgress::~PythonProgress() {
  // The callback is a Python object: drop it with the GIL held (the destructor may run without it).
  py::gil_scoped_acquire gil;
  callback_ = py::object();
}

PythonProgress PythonProgress::from_argument(const py::object& progress, const std::string& label) {
  return PythonProgress(py::module_::import("snnc._progress").attr("resolve")(progress, label));
}

void PythonProgress::operator()(const std::string& stage, int64_t done, int64_t total) const {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  if (!callback_.is_none()) callback_(done, total, stage);
}

}  // namespace snnc_py
