// Opening an HDF5 file that snnc did not just write itself (a model, dataset, checkpoint or NIR file from
// anywhere): before any reader looks inside, every object in it is checked to keep its values in this
// file's own bytes and to declare no more values than those bytes can hold.
//   - soft, external and user-defined links are refused (an external link opens another file);
//   - datasets with external storage (raw values in another file, e.g. /etc/os-release) or a virtual
//     layout (values gathered from other files) are refused, named;
//   - a dataset must not declare more bytes than it stores (compression may shrink them ~1100-fold at
//     most), and what it stores is bounded by the file's real size whatever its headers claim: a file of
//     a few kilobytes that declares gigabytes is damaged or hostile, refused before anything is allocated.
// Internal to the core (included by .cpp files only).
#pragma once
#include <H5Cpp.h>

#include <cstdint>
#include <string>

namespace snn::h5 {

// Opens path read-only after the checks above; throws snn::Error naming the file and the object.
H5::H5File open_untrusted(const std::string& path);
// The checks above on an open file; the Error names the object, not the file.
void require_self_contained(const H5::H5File& file);

// The check on one dataset about to be read (numel values of its stored type); `what` names it in errors.
void require_own_storage(const H5::DataSet& ds, int64_t numel, const std::string& what);

}  // namespace snn::h5
