#include "snn/hdf5_untrusted.hpp"

#include <algorithm>

#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/memory.hpp"

namespace snn::h5 {
namespace {

// Deflate, the strongest filter HDF5 files commonly carry, expands at most ~1032-fold.
constexpr double kMaxCompression = 1100.0;
// More objects than any model, dataset, checkpoint or NIR graph holds: walking them is the cost of a
// hostile file, so it is bounded.
constexpr int64_t kMaxLinks = int64_t{1} << 20;

const char* link_kind(H5L_type_t type) {
  switch (type) {
    case H5L_TYPE_SOFT: return "a soft link";
    case H5L_TYPE_EXTERNAL: return "an external link (to another file)";
    default: return "a user-defined link";
  }
}

double stored_bytes(const H5::DataSet& ds) {
  hsize_t file_size = 0;
  const hid_t file = H5Iget_file_id(ds.getId());
  if (file >= 0) {
    H5Fget_filesize(file, &file_size);
    H5Fclose(file);
  }
  return double(std::min<hsize_t>(ds.getStorageSize(), file_size));
}

struct Walk {
  int64_t links = 0;
  std::string error;  // the first refusal; the walk stops there
};

void check_dataset(hid_t group, const char* name) {
  H5::DataSet ds(H5Dopen2(group, name, H5P_DEFAULT));
  const std::string what = std::string("dataset '/") + name + "'";
  H5::DSetCreatPropList dcpl = ds.getCreatePlist();
  if (H5Pget_layout(dcpl.getId()) == H5D_VIRTUAL)
    throw Error(what + " is virtual (its values live in other files); snnc reads only values stored in the file itself");
  if (H5Pget_external_count(dcpl.getId()) > 0)
    throw Error(what + " keeps its values in an external file; snnc reads only values stored in the file itself");
  const H5::DataType type = ds.getDataType();
  if (type.getClass() == H5T_VLEN || (type.getClass() == H5T_STRING && type.isVariableStr())) return;  // global heap
  require_own_storage(ds, ds.getSpace().getSimpleExtentNpoints(), what);
}

herr_t visit_link(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  auto& w = *static_cast<Walk*>(data);
  try {
    if (++w.links > kMaxLinks) throw Error("more than 2^20 objects: not a file snnc writes or reads");
    if (info->type != H5L_TYPE_HARD)
      throw Error(std::string("'/") + name + "' is " + link_kind(info->type) +
                  "; snnc reads only objects stored in the file itself");
    H5O_info_t object;
    if (H5Oget_info_by_name(group, name, &object, H5P_DEFAULT) < 0)
      throw Error(std::string("cannot open '/") + name + "': " + error_stack_text());
    if (object.type == H5O_TYPE_DATASET) check_dataset(group, name);
    return 0;
  } catch (const Error& e) {
    w.error = e.what();
  } catch (const H5::Exception&) {
    w.error = std::string("cannot read '/") + name + "': " + error_stack_text();
  }
  return -1;  // stops the walk
}

}  // namespace

void require_own_storage(const H5::DataSet& ds, int64_t numel, const std::string& what) {
  if (numel <= 0) return;
  const double declared = double(numel) * double(ds.getDataType().getSize());
  const bool filtered = ds.getCreatePlist().getNfilters() > 0;
  const double stored = stored_bytes(ds);
  if (declared > stored * (filtered ? kMaxCompression : 1.0))
    throw Error(what + " declares " + format_bytes(declared) + " of values but the file stores " + format_bytes(stored) +
                (filtered ? " (compressed, at most ~1100:1)" : "") + " (truncated, damaged or never written)");
}

void require_self_contained(const H5::H5File& file) {
  Walk w;
  const herr_t rc = H5Lvisit(file.getId(), H5_INDEX_NAME, H5_ITER_NATIVE, visit_link, &w);
  if (!w.error.empty()) throw Error(w.error);
  if (rc < 0) throw Error("cannot list its objects (damaged file?): " + error_stack_text());
}

H5::H5File open_untrusted(const std::string& path) {
  H5::H5File file(path, H5F_ACC_RDONLY);
  try {
    require_self_contained(file);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return file;
}

}  // namespace snn::h5
