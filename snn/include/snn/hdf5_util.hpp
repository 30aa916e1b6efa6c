// Small helpers over the HDF5 C++ API shared by the model and result file writers: attributes and
// datasets of scalars, strings, float tensors; and atomic file writing (temp file + rename).
// Internal to the core (included by .cpp files only).
#pragma once
#include <H5Cpp.h>

#include <functional>
#include <string>
#include <vector>

#include "snn/tensor.hpp"

namespace snn::h5 {

void write_attr(H5::H5Object& obj, const std::string& name, const std::string& value);
void write_attr(H5::H5Object& obj, const std::string& name, double value);
void write_attr(H5::H5Object& obj, const std::string& name, int64_t value);
void write_attr(H5::H5Object& obj, const std::string& name, const std::vector<int64_t>& value);
bool has_attr(const H5::H5Object& obj, const std::string& name);
std::string read_string_attr(const H5::H5Object& obj, const std::string& name);
double read_double_attr(const H5::H5Object& obj, const std::string& name);
// A whole number in [0, 2^53) stored as any number type; anything else (NaN, 1e69, 2.5, -1) is an Error
// naming the attribute, never an out-of-range conversion.
int64_t read_count_attr(const H5::H5Object& obj, const std::string& name);
std::vector<int64_t> read_int_array_attr(const H5::H5Object& obj, const std::string& name);
// Names of all attributes of obj.
std::vector<std::string> attr_names(const H5::H5Object& obj);

void write_tensor(H5::Group& g, const std::string& name, const Tensor& t);
void write_vector(H5::Group& g, const std::string& name, const std::vector<double>& v);
void write_matrix(H5::Group& g, const std::string& name, const std::vector<std::vector<double>>& rows);
Tensor read_tensor(const H5::Group& g, const std::string& name);
std::vector<double> read_vector(const H5::Group& g, const std::string& name);  // doubles, exactly
std::vector<std::string> child_names(const H5::Group& g);

// The innermost messages of HDF5's current error stack (the real cause, e.g. "Fletcher32 checksum
// failure" or the operating system's errno text), for error messages.
std::string error_stack_text();

// The bytes of an HDF5 file that write(file) builds in memory (HDF5's core driver).
std::string file_image(const std::function<void(H5::H5File&)>& write);
// An HDF5 file opened read-only from such bytes (copied); `name` names it in errors.
H5::H5File open_image(const std::string& image, const std::string& name);

// Calls write(file) on a new HDF5 file built in memory, then writes it with write_file_atomically
// (output_file.hpp): `path` ends up either untouched or complete. On any error nothing is left behind.
void write_atomically(const std::string& path, const std::function<void(H5::H5File&)>& write);

}  // namespace snn::h5
