#include "arguments.hpp"

#include "snn/error.hpp"
#include "snn/image_checks.hpp"

namespace snnc_py {

namespace {
PyObject* g_argument_error = nullptr;
PyObject* g_argument_type_error = nullptr;

PyObject* new_error(const char* name, const py::object& error, PyObject* builtin, const char* doc) {
  py::tuple bases = py::make_tuple(error, py::handle(builtin));
  PyObject* cls = PyErr_NewExceptionWithDoc(name, doc, bases.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  return cls;
}

// "float 2.5", "str 'x'": what was given, short.
std::string given(const py::handle& v) {
  std::string r = py::repr(v);
  if (r.size() > 60) r = r.substr(0, 57) + "...";
  return std::string(py::str(py::type::of(v).attr("__name__"))) + " " + r;
}

std::string decimal(const py::int_& i) { return i.attr("__str__")().cast<std::string>(); }

bool is_numpy_bool(const py::handle& v) {
  const std::string type = py::str(py::type::of(v).attr("__name__"));
  return (type == "bool" || type == "bool_") && std::string(py::str(py::type::of(v).attr("__module__"))) == "numpy";
}

// An integer-like Python value as a Python int; a type error for anything else (bools included: True is
// not a count).
py::int_ as_int(const py::handle& v, const std::string& name) {
  if (PyBool_Check(v.ptr()) || is_numpy_bool(v) || !PyIndex_Check(v.ptr()))
    raise_argument_type_error(name + " must be a whole number (int), got " + given(v));
  return py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
}
}  // namespace

void register_argument_errors(py::module_& m, const py::object& error) {
  g_argument_error = new_error("snnc.ArgumentError", error, PyExc_ValueError,
                               "An argument out of range (a snnc.Error and a ValueError); the message names it.");
  g_argument_type_error = new_error("snnc.ArgumentTypeError", error, PyExc_TypeError,
                                    "An argument of the wrong type (a snnc.Error and a TypeError).");
  m.attr("ArgumentError") = py::handle(g_argument_error);
  m.attr("ArgumentTypeError") = py::handle(g_argument_type_error);
}

void raise_argument_error(const std::string& message) {
  PyErr_SetString(g_argument_error, message.c_str());
  throw py::error_already_set();
}

void raise_argument_type_error(const std::string& message) {
  PyErr_SetString(g_argument_type_error, message.c_str());
  throw py::error_already_set();
}

int64_t whole_argument(const py::handle& v, const snn::WholeRange& r, const std::string& name) {
  const py::int_ i = as_int(v, name);
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow) raise_argument_error(name + " " + snn::range_problem(overflow * 1e300, r, decimal(i)));
  try {
    snn::check_range(int64_t(x), r, name);
  } catch (const snn::Error& e) {
    raise_argument_error(e.what());
  }
  return int64_t(x);
}

double real_argument(const py::handle& v, const snn::RealRange& r, const std::string& name) {
  const bool number = !PyBool_Check(v.ptr()) && !is_numpy_bool(v) && !py::isinstance<py::str>(v) &&
                      !py::isinstance<py::bytes>(v) && !v.is_none() && PyNumber_Check(v.ptr());
  const double x = number ? PyFloat_AsDouble(v.ptr()) : 0.0;
  if (!number || (x == -1.0 && PyErr_Occurred())) {
    PyErr_Clear();
    raise_argument_type_error(name + " must be a number, got " + given(v));
  }
  const std::string problem = snn::range_problem(x, r, py::str(v));  // as written: 0 as "0", as the CLI shows it
  if (!problem.empty()) raise_argument_error(name + " " + problem);
  return x;
}

uint64_t encoding_seed_argument(const py::handle& v, const std::string& encoding) {
  if (v.is_none()) return 0;
  const uint64_t seed = seed_argument(v, "seed");  // a wrong type is named first
  if (encoding == "direct") raise_argument_error("seed has no effect with encoding 'direct' (it seeds Poisson encoding)");
  return seed;
}

uint64_t seed_argument(const py::handle& v, const std::string& name) {
  const py::int_ i = as_int(v, name);
  try {
    return snn::parse_seed(decimal(i), name);
  } catch (const snn::Error& e) {
    raise_argument_error(e.what());
  }
}

bool bool_argument(const py::handle& v, const std::string& name) {
  if (!PyBool_Check(v.ptr()) && !is_numpy_bool(v)) raise_argument_type_error(name + " must be True or False, got " + given(v));
  return PyObject_IsTrue(v.ptr()) == 1;
}

std::string text_argument(const py::handle& v, const std::string& name) {
  if (!py::isinstance<py::str>(v)) raise_argument_type_error(name + " must be a str, got " + given(v));
  const std::string s = v.cast<std::string>();
  if (s.find('\0') != std::string::npos) raise_argument_error(name + " contains a NUL byte: " + std::string(py::repr(v)));
  return s;
}

std::string choice_argument(const py::handle& v, std::initializer_list<const char*> choices, const std::string& name) {
  const std::string s = text_argument(v, name);
  std::string known;
  for (const char* c : choices) {
    if (s == c) return s;
    known += std::string(known.empty() ? "" : ", ") + c;
  }
  raise_argument_error(name + " must be one of " + known + ", got '" + s + "'");
}

std::string path_argument(const py::handle& v, const std::string& name) {
  const py::module_ os = py::module_::import("os");
  if (!py::isinstance<py::str>(v) && !py::isinstance<py::bytes>(v) && !py::hasattr(v, "__fspath__"))
    raise_argument_type_error(name + " must be a path (str, bytes or os.PathLike), got " + given(v));
  const py::object text = os.attr("fsdecode")(os.attr("fspath")(v));
  const std::string s = text.cast<std::string>();
  if (s.empty()) raise_argument_error(name + ": the path is empty");
  if (s.find('\0') != std::string::npos)
    raise_argument_error(name + " " + std::string(py::repr(text)) + " contains a NUL byte (a path cannot hold one)");
  return s;
}

std::vector<float> real_list_argument(const py::handle& v, const snn::RealRange& r, const std::string& name) {
  std::vector<float> out;
  if (v.is_none()) return out;
  if (py::isinstance<py::str>(v) || !py::isinstance<py::iterable>(v))
    raise_argument_type_error(name + " must be a sequence of numbers, got " + given(v));
  size_t i = 0;
  for (const py::handle item : v) out.push_back(float(real_argument(item, r, name + "[" + std::to_string(i++) + "]")));
  return out;
}

std::vector<int64_t> whole_list_argument(const py::handle& v, const snn::WholeRange& r, const std::string& name) {
  std::vector<int64_t> out;
  if (v.is_none()) return out;
  if (py::isinstance<py::str>(v) || !py::isinstance<py::iterable>(v))
    raise_argument_type_error(name + " must be a sequence of whole numbers, got " + given(v));
  size_t i = 0;
  for (const py::handle item : v) out.push_back(whole_argument(item, r, name + "[" + std::to_string(i++) + "]"));
  return out;
}

void warn_about_pixel_range(const float* values, int64_t count, const snn::Preprocessing& model,
                            const std::string& what) {
  const std::string warning = snn::pixel_range_warning(values, count, model, what);
  if (!warning.empty() && PyErr_WarnEx(PyExc_UserWarning, warning.c_str(), 1) != 0) throw py::error_already_set();
}

}  // namespace snnc_py
