#include "snn/hdf5_util.hpp"

#include <cstdio>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "snn/error.hpp"

namespace snn::h5 {

void write_attr(H5::H5Object& obj, const std::string& name, const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, std::max<size_t>(1, value.size()));
  H5::Attribute a = obj.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  a.write(type, value.empty() ? std::string(1, '\0') : value);
}

void write_attr(H5::H5Object& obj, const std::string& name, double value) {
  H5::Attribute a = obj.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_DOUBLE, &value);
}

void write_attr(H5::H5Object& obj, const std::string& name, int64_t value) {
  H5::Attribute a = obj.createAttribute(name, H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_INT64, &value);
}

void write_attr(H5::H5Object& obj, const std::string& name, const std::vector<int64_t>& value) {
  hsize_t n = value.size();
  H5::DataSpace space = n ? H5::DataSpace(1, &n) : H5::DataSpace(H5S_NULL);
  H5::Attribute a = obj.createAttribute(name, H5::PredType::NATIVE_INT64, space);
  if (n) a.write(H5::PredType::NATIVE_INT64, value.data());
}

bool has_attr(const H5::H5Object& obj, const std::string& name) { return obj.attrExists(name); }

std::string read_string_attr(const H5::H5Object& obj, const std::string& name) {
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_STRING) throw Error("attribute '" + name + "' is not a string");
  H5::StrType type = a.getStrType();
  std::string s;
  a.read(type, s);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

double read_double_attr(const H5::H5Object& obj, const std::string& name) {
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_FLOAT && a.getTypeClass() != H5T_INTEGER)
    throw Error("attribute '" + name + "' is not a number");
  if (a.getSpace().getSimpleExtentNpoints() != 1) throw Error("attribute '" + name + "' is not a scalar");
  double v = 0;
  a.read(H5::PredType::NATIVE_DOUBLE, &v);
  return v;
}

std::vector<int64_t> read_int_array_attr(const H5::H5Object& obj, const std::string& name) {
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_INTEGER) throw Error("attribute '" + name + "' is not an integer array");
  H5::DataSpace space = a.getSpace();
  if (space.getSimpleExtentType() == H5S_NULL) return {};
  std::vector<int64_t> v(static_cast<size_t>(space.getSimpleExtentNpoints()));
  if (!v.empty()) a.read(H5::PredType::NATIVE_INT64, v.data());
  return v;
}

std::vector<std::string> attr_names(const H5::H5Object& obj) {
  std::vector<std::string> names;
  const int n = obj.getNumAttrs();
  for (int i = 0; i < n; ++i) names.push_back(obj.openAttribute(unsigned(i)).getName());
  return names;
}

void write_tensor(H5::Group& g, const std::string& name, const Tensor& t) {
  std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
  if (dims.empty()) dims.push_back(1);
  H5::DataSpace space(int(dims.size()), dims.data());
  H5::DataSet ds = g.createDataSet(name, H5::PredType::NATIVE_FLOAT, space);
  if (t.numel()) ds.write(t.data(), H5::PredType::NATIVE_FLOAT);
}

void write_vector(H5::Group& g, const std::string& name, const std::vector<double>& v) {
  hsize_t n = v.size();
  H5::DataSpace space(1, &n);
  H5::DataSet ds = g.createDataSet(name, H5::PredType::NATIVE_DOUBLE, space);
  if (n) ds.write(v.data(), H5::PredType::NATIVE_DOUBLE);
}

void write_matrix(H5::Group& g, const std::string& name, const std::vector<std::vector<double>>& rows) {
  hsize_t dims[2] = {rows.size(), rows.empty() ? 0 : rows[0].size()};
  std::vector<double> flat;
  for (const auto& r : rows) {
    if (r.size() != dims[1]) throw Error("write_matrix '" + name + "': ragged rows");
    flat.insert(flat.end(), r.begin(), r.end());
  }
  H5::DataSpace space(2, dims);
  H5::DataSet ds = g.createDataSet(name, H5::PredType::NATIVE_DOUBLE, space);
  if (!flat.empty()) ds.write(flat.data(), H5::PredType::NATIVE_DOUBLE);
}

Tensor read_tensor(const H5::Group& g, const std::string& name) {
  H5::DataSet ds = g.openDataSet(name);
  if (ds.getTypeClass() != H5T_FLOAT) throw Error("dataset '" + name + "' is not floating point");
  H5::DataSpace space = ds.getSpace();
  const int rank = space.getSimpleExtentNdims();
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  space.getSimpleExtentDims(dims.data());
  Shape shape(dims.begin(), dims.end());
  Tensor t(shape);
  if (t.numel()) ds.read(t.data(), H5::PredType::NATIVE_FLOAT);
  return t;
}

std::vector<std::string> child_names(const H5::Group& g) {
  std::vector<std::string> names;
  const hsize_t n = g.getNumObjs();
  for (hsize_t i = 0; i < n; ++i) names.push_back(g.getObjnameByIdx(i));
  return names;
}

void write_atomically(const std::string& path, const std::function<void(H5::H5File&)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir)) throw Error("cannot write '" + path + "': directory '" + dir.string() + "' does not exist");
  std::random_device rd;
  const fs::path tmp = dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                              std::to_string(rd() & 0xffffff));
  try {
    {
      H5::H5File file(tmp.string(), H5F_ACC_TRUNC);
      write(file);
    }
    fs::rename(tmp, target);
  } catch (const H5::Exception& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Error("cannot write '" + path + "': HDF5 error in " + e.getFuncName() + ": " + e.getDetailMsg());
  } catch (const fs::filesystem_error& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Error("cannot write '" + path + "': " + e.what());
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

}  // namespace snn::h5
