// Python arguments, checked before any work starts, against the library's limits (snn/limits.hpp) and in
// its words, so that `net.sweep(T=0)` and `snnc sweep --T 0` give the same error. A value of the wrong
// type raises snnc.ArgumentTypeError (a snnc.Error and a TypeError); a value out of range raises
// snnc.ArgumentError (a snnc.Error and a ValueError). Both name the parameter.
#pragma once
#include <pybind11/pybind11.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "snn/limits.hpp"
#include "snn/network.hpp"

namespace snnc_py {
namespace py = pybind11;

// Creates snnc.ArgumentError and snnc.ArgumentTypeError on the module, below `error` (snnc.Error).
void register_argument_errors(py::module_& m, const py::object& error);
[[noreturn]] void raise_argument_error(const std::string& message);
[[noreturn]] void raise_argument_type_error(const std::string& message);

// An int (or NumPy integer; not a bool, not a float) in the range.
int64_t whole_argument(const py::handle& v, const snn::WholeRange& r, const std::string& name);
// An int or float (or NumPy number; not a bool) in the range; NaN is out of every range.
double real_argument(const py::handle& v, const snn::RealRange& r, const std::string& name);
// A seed: an int in [0, 2^64 - 1] (snn::parse_seed's rule).
uint64_t seed_argument(const py::handle& v, const std::string& name);
// The seed of Poisson encoding: None is 0; a seed given with encoding 'direct' is an error, as the CLI's
// --seed is (it would do nothing).
uint64_t encoding_seed_argument(const py::handle& v, const std::string& encoding);
bool bool_argument(const py::handle& v, const std::string& name);
// A str without NUL bytes.
std::string text_argument(const py::handle& v, const std::string& name);
// One of `choices`.
std::string choice_argument(const py::handle& v, std::initializer_list<const char*> choices, const std::string& name);
// A file path: str, bytes or os.PathLike, not empty, without NUL bytes (the C library would silently cut
// the path at one).
std::string path_argument(const py::handle& v, const std::string& name);
// A sequence of numbers (each in the range); None: empty.
std::vector<float> real_list_argument(const py::handle& v, const snn::RealRange& r, const std::string& name);
std::vector<int64_t> whole_list_argument(const py::handle& v, const snn::WholeRange& r, const std::string& name);

// Raises a UserWarning (snn::pixel_range_warning) when float images are far outside the range the
// network's normalisation was made for.
void warn_about_pixel_range(const float* values, int64_t count, const snn::Preprocessing& model,
                            const std::string& what);

}  // namespace snnc_py
