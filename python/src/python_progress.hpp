// Long C++ work (sweeps, calibration, simulation) runs with the GIL released so that other Python threads
// go on. Between batches it calls back here, which takes the GIL for a moment to
//   - raise a pending Ctrl-C (KeyboardInterrupt stops the work cleanly: the C++ side unwinds, nothing is
//     left half-done in the network, since calibration writes its biases only at the end), and
//   - call the Python progress callable, if any: callable(done, total, stage).
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "snn/sweep.hpp"

namespace snnc_py {
namespace py = pybind11;

class PythonProgress {
 public:
  // callback: None or a callable(done, total, stage). Constructed with the GIL held.
  explicit PythonProgress(py::object callback) : callback_(std::move(callback)) {}
  // A call's `progress` argument as snnc._progress.resolve reads it: None = a bar on a terminal (nothing
  // in logs), True / False, or a callable(done, total, stage).
  static PythonProgress from_argument(const py::object& progress, const std::string& label);
  ~PythonProgress();
  // From the C++ work, without the GIL. Throws py::error_already_set for KeyboardInterrupt or an
  // exception raised by the callback.
  void operator()(const std::string& stage, int64_t done, int64_t total) const;
  snn::ProgressFn fn(const std::string& stage) const {
    return [this, stage](int64_t done, int64_t total) { (*this)(stage, done, total); };
  }

 private:
  py::object callback_;
};

}  // namespace snnc_py
