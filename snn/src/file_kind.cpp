#include "snn/file_kind.hpp"

#include <H5Cpp.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>

#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/isolated_read.hpp"

namespace snn {

namespace {

constexpr char kHdf5Signature[] = "\x89HDF\r\n\x1a\n";

std::string read_head(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), std::streamsize(n));
  bytes.resize(size_t(in.gcount()));
  return bytes;
}

bool starts_with(const std::string& bytes, const char* prefix, size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), prefix, n) == 0;
}

// An HDF5 file's signature sits at 0 or, after a user block, at 512, 1024, 2048, ...
bool has_hdf5_signature(const std::string& path, off_t size) {
  std::ifstream in(path, std::ios::binary);
  char sig[8];
  for (off_t at = 0; at + 8 <= size; at = at == 0 ? 512 : at * 2) {
    in.clear();
    in.seekg(at);
    if (!in.read(sig, 8)) return false;
    if (std::memcmp(sig, kHdf5Signature, 8) == 0) return true;
  }
  return false;
}

// Only the root's attributes and links are looked at (by name: no enumeration, no dataset read).
FileKind hdf5_kind_in_process(const std::string& path) {
  try {
    H5::Exception::dontPrint();
    H5::H5File file(path, H5F_ACC_RDONLY);
    if (h5::has_attr(file, "format")) {
      const std::string format = h5::read_string_attr(file, "format");
      if (format == "snnc-network") return FileKind::SnncModel;
      if (format == "snnc-sweep") return FileKind::SweepResults;
      if (format == "snnc-sweep-checkpoint") return FileKind::SweepCheckpoint;
    }
    if (file.nameExists("node") && file.childObjType("node") == H5O_TYPE_GROUP) return FileKind::NirGraph;
  } catch (const H5::Exception&) {
  } catch (const Error&) {
  }
  return FileKind::OtherHdf5;
}

// The file (an existing -o) may be anything: it is looked at in a child process (isolated_read.hpp), and
// one that crashes libhdf5 is simply some other HDF5 file.
FileKind hdf5_kind(const std::string& path) {
  try {
    const std::string kind = read_isolated(path, [&] { return std::to_string(int(hdf5_kind_in_process(path))); });
    return FileKind(std::stoi(kind));
  } catch (const Error&) {
    return FileKind::OtherHdf5;
  }
}

}  // namespace

FileKind detect_file_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return FileKind::Missing;
  if (st.st_size == 0) return FileKind::Empty;
  if (has_hdf5_signature(path, st.st_size)) return hdf5_kind(path);
  const std::string head = read_head(path, 8);
  if (starts_with(head, "PK\x03\x04", 4) || starts_with(head, "PK\x05\x06", 4)) return FileKind::Zip;
  if (starts_with(head, "\x80", 1)) return FileKind::Pickle;
  if (starts_with(head, "\x1f\x8b", 2)) return FileKind::Gzip;
  if (starts_with(head, "\0\0\x08", 3)) return FileKind::Idx;
  return FileKind::Other;
}

std::string describe(FileKind kind) {
  switch (kind) {
    case FileKind::Missing: return "nothing";
    case FileKind::Empty: return "an empty file";
    case FileKind::SnncModel: return "an snnc model (.snn.h5)";
    case FileKind::SweepResults: return "an snnc sweep result file";
    case FileKind::SweepCheckpoint: return "an snnc sweep checkpoint";
    case FileKind::NirGraph: return "a NIR graph";
    case FileKind::OtherHdf5: return "an HDF5 file that snnc did not write (a dataset?)";
    case FileKind::Zip: return "a ZIP archive (a TorchScript or torch.export model?)";
    case FileKind::Pickle: return "a Python pickle (a torch.save file?)";
    case FileKind::Gzip: return "a gzip file";
    case FileKind::Idx: return "an IDX dataset file";
    case FileKind::Other: return "a file of another kind (an ONNX model, text, ...?)";
  }
  return "a file";
}

void check_replaceable(const std::string& path, FileKind writing, bool overwrite, const std::string& option,
                       const std::string& overwrite_hint) {
  if (overwrite) return;
  const FileKind existing = detect_file_kind(path);
  if (existing == FileKind::Missing || existing == FileKind::Empty || existing == writing) return;
  throw Error("refusing to replace " + option + " '" + path + "': it is " + describe(existing) + ", and this writes " +
              describe(writing) + "; choose another path, or pass " + overwrite_hint + " to replace it");
}

}  // namespace snn
