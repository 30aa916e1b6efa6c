#include "snn/hdf5_util.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <random>
#include <unistd.h>

#include "snn/error.hpp"
#include "snn/hdf5_untrusted.hpp"
#include "snn/output_file.hpp"

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

namespace {
void require_attr(const H5::H5Object& obj, const std::string& name) {
  if (!obj.attrExists(name)) throw Error("missing attribute '" + name + "'");
}
}  // namespace

std::string read_string_attr(const H5::H5Object& obj, const std::string& name) {
  require_attr(obj, name);
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_STRING) throw Error("attribute '" + name + "' is not a string");
  H5::StrType type = a.getStrType();
  std::string s;
  a.read(type, s);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

double read_double_attr(const H5::H5Object& obj, const std::string& name) {
  require_attr(obj, name);
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_FLOAT && a.getTypeClass() != H5T_INTEGER)
    throw Error("attribute '" + name + "' is not a number");
  if (a.getSpace().getSimpleExtentNpoints() != 1) throw Error("attribute '" + name + "' is not a scalar");
  // Only the standard number types are converted: libhdf5 1.10 trusts a stored type's bit fields, and a
  // damaged 8-byte float type smashed the stack inside its conversion (H5T__bit_get_d; found by
  // fuzz_model_file). Everything snnc and h5py write is one of these.
  static const H5::PredType* const kStandard[] = {
      &H5::PredType::IEEE_F32LE, &H5::PredType::IEEE_F32BE, &H5::PredType::IEEE_F64LE, &H5::PredType::IEEE_F64BE,
      &H5::PredType::STD_I8LE,   &H5::PredType::STD_I8BE,   &H5::PredType::STD_I16LE,  &H5::PredType::STD_I16BE,
      &H5::PredType::STD_I32LE,  &H5::PredType::STD_I32BE,  &H5::PredType::STD_I64LE,  &H5::PredType::STD_I64BE,
      &H5::PredType::STD_U8LE,   &H5::PredType::STD_U8BE,   &H5::PredType::STD_U16LE,  &H5::PredType::STD_U16BE,
      &H5::PredType::STD_U32LE,  &H5::PredType::STD_U32BE,  &H5::PredType::STD_U64LE,  &H5::PredType::STD_U64BE};
  const H5::DataType stored = a.getDataType();
  if (std::none_of(std::begin(kStandard), std::end(kStandard), [&](const H5::PredType* t) { return stored == *t; }))
    throw Error("attribute '" + name + "' has a non-standard number type");
  double v = 0;
  a.read(H5::PredType::NATIVE_DOUBLE, &v);
  return v;
}

int64_t read_count_attr(const H5::H5Object& obj, const std::string& name) {
  const double v = read_double_attr(obj, name);
  if (!(v >= 0.0 && v < 9007199254740992.0 && v == std::floor(v)))  // also false for NaN
    throw Error("attribute '" + name + "' must be a whole number in [0, 2^53), got " + std::to_string(v));
  return int64_t(v);
}

std::vector<int64_t> read_int_array_attr(const H5::H5Object& obj, const std::string& name) {
  require_attr(obj, name);
  H5::Attribute a = obj.openAttribute(name);
  if (a.getTypeClass() != H5T_INTEGER) throw Error("attribute '" + name + "' is not an integer array");
  H5::DataSpace space = a.getSpace();
  if (space.getSimpleExtentType() == H5S_NULL) return {};
  if (space.getSimpleExtentNpoints() > 4096) throw Error("attribute '" + name + "' is implausibly long");
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
  // A Fletcher-32 checksum on every non-empty tensor, verified by HDF5 on every read: a flipped bit in
  // the weights is an error, not a silently different network. The filter needs a chunked layout;
  // chunks stay under HDF5's 4 GiB limit by splitting the first dimension.
  H5::DSetCreatPropList plist;
  if (t.numel() > 0) {
    std::vector<hsize_t> chunk = dims;
    const int64_t row = t.numel() / int64_t(dims[0]);
    const int64_t max_rows = std::max<int64_t>(1, (int64_t{1} << 28) / std::max<int64_t>(1, row));  // 1 GiB
    chunk[0] = hsize_t(std::min<int64_t>(int64_t(dims[0]), max_rows));
    plist.setChunk(int(chunk.size()), chunk.data());
    plist.setFletcher32();
  }
  H5::DataSet ds = g.createDataSet(name, H5::PredType::NATIVE_FLOAT, space, plist);
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

namespace {
// The shape a floating-point dataset declares, checked against the bytes actually stored before anything
// is allocated for it (a damaged file may declare any shape; hdf5_untrusted.hpp).
Shape checked_float_shape(const H5::DataSet& ds, const std::string& name) {
  if (ds.getTypeClass() != H5T_FLOAT) throw Error("dataset '" + name + "' is not floating point");
  H5::DataSpace space = ds.getSpace();
  const int rank = space.getSimpleExtentNdims();
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  space.getSimpleExtentDims(dims.data());
  Shape shape(dims.begin(), dims.end());
  require_own_storage(ds, numel_of(shape), "tensor '" + name + "' of shape " + to_string(shape));
  return shape;
}

void read_checked(const H5::DataSet& ds, const std::string& name, void* to, const H5::PredType& type) {
  try {
    ds.read(to, type);
  } catch (const H5::Exception&) {
    const std::string cause = error_stack_text();
    if (cause.find("checksum") != std::string::npos || cause.find("Fletcher") != std::string::npos)
      throw Error("tensor '" + name + "' fails its Fletcher-32 checksum: the file is corrupted");
    throw Error("tensor '" + name + "' cannot be read: " + cause);
  }
}
}  // namespace

Tensor read_tensor(const H5::Group& g, const std::string& name) {
  H5::DataSet ds = g.openDataSet(name);
  Tensor t(checked_float_shape(ds, name));
  if (t.numel()) read_checked(ds, name, t.data(), H5::PredType::NATIVE_FLOAT);
  return t;
}

std::vector<double> read_vector(const H5::Group& g, const std::string& name) {
  H5::DataSet ds = g.openDataSet(name);
  const Shape shape = checked_float_shape(ds, name);
  if (shape.size() != 1) throw Error("dataset '" + name + "' is not a vector (shape " + to_string(shape) + ")");
  std::vector<double> v(static_cast<size_t>(shape[0]));
  if (!v.empty()) read_checked(ds, name, v.data(), H5::PredType::NATIVE_DOUBLE);
  return v;
}

std::vector<std::string> child_names(const H5::Group& g) {
  std::vector<std::string> names;
  const hsize_t n = g.getNumObjs();
  for (hsize_t i = 0; i < n; ++i) names.push_back(g.getObjnameByIdx(i));
  return names;
}

std::string error_stack_text() {
  std::vector<std::string> lines;
  auto collect = [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
    if (e->desc && *e->desc) static_cast<std::vector<std::string>*>(out)->push_back(e->desc);
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect, &lines);  // innermost (the real cause) first
  std::string text;
  for (const auto& l : lines) {
    if (text.find(l) != std::string::npos) continue;
    text += (text.empty() ? "" : "; ") + l;
    if (text.size() > 300) break;
  }
  return text;
}

std::string file_image(const std::function<void(H5::H5File&)>& write) {
  H5::FileAccPropList fapl;
  fapl.setCore(size_t{1} << 20, false);  // in memory, no backing store
  // The default (earliest) file format on purpose: with the 1.8+ format the superblock carries a
  // checksum that HDF5 1.10's H5Fget_file_image leaves stale. Damage is caught by the tensors'
  // Fletcher-32 and the model file's own CRC-32 digests instead.
  H5::H5File file("snnc-in-memory-" + std::to_string(::getpid()) + ".h5", H5F_ACC_TRUNC,
                  H5::FileCreatPropList::DEFAULT, fapl);
  write(file);
  file.flush(H5F_SCOPE_GLOBAL);
  const ssize_t n = H5Fget_file_image(file.getId(), nullptr, 0);
  if (n < 0) throw Error("HDF5 could not produce the file image");
  std::string image(size_t(n), '\0');
  if (H5Fget_file_image(file.getId(), image.data(), image.size()) != n) throw Error("HDF5 could not produce the file image");
  return image;
}

H5::H5File open_image(const std::string& image, const std::string& name) {
  // HDF5 copies the image: it need not outlive the file.
  H5::FileAccPropList fapl;
  fapl.setCore(size_t{1} << 20, false);
  if (H5Pset_file_image(fapl.getId(), const_cast<char*>(image.data()), image.size()) < 0)
    throw Error(name + ": HDF5 could not take the file image");
  // The core driver refuses a name that exists on disk ("file already exists"): the image gets one that
  // cannot.
  static std::atomic<int64_t> count{0};
  const std::string label = "/nonexistent/snnc-file-image-" + std::to_string(::getpid()) + "-" + std::to_string(count++);
  return H5::H5File(label, H5F_ACC_RDONLY, H5::FileCreatPropList::DEFAULT, fapl);
}

void write_atomically(const std::string& path, const std::function<void(H5::H5File&)>& write) {
  // The file is built in memory and written out in one go by write_file_atomically: HDF5 never touches
  // the disk, so a full disk is one clear errno, not a half-closed HDF5 file whose destructors fail at exit.
  std::string image;
  try {
    image = file_image(write);
  } catch (const H5::Exception& e) {
    throw Error("cannot write '" + path + "': HDF5 error: " + error_stack_text());
  }
  write_file_atomically(path, image.data(), image.size());
}

}  // namespace snn::h5
