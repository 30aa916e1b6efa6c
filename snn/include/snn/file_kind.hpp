// What kind of file a path holds, told by its content (magic bytes; for HDF5, the root's `format`
// attribute or NIR's layout), so that an output never silently replaces a file of another kind: `snnc
// export model.snn.h5 -o model.pt` must not turn the user's TorchScript model into a NIR graph. A file of
// the kind being written is replaced as before (atomically); an empty file is no loss either.
#pragma once
#include <string>

namespace snn {

enum class FileKind {
  Missing,          // nothing there (or not a regular file: check_output_path judges those)
  Empty,            // 0 bytes
  SnncModel,        // .snn.h5 (format = "snnc-network")
  SweepResults,     // sweep -o (format = "snnc-sweep")
  SweepCheckpoint,  // sweep --checkpoint (format = "snnc-sweep-checkpoint")
  NirGraph,         // NIR (nir.write's layout: /node group)
  OtherHdf5,        // an HDF5 file of another kind (a dataset, a NIR file of another version...)
  Zip,              // a ZIP archive: TorchScript, torch.export (.pt2), torch.save
  Pickle,           // torch.save's legacy format, or any Python pickle
  Gzip,             // e.g. a compressed IDX dataset
  Idx,              // an IDX images or labels file
  Other,            // anything else (text, ONNX protobuf, ...)
};

FileKind detect_file_kind(const std::string& path);
// "a TorchScript/torch.export model or other ZIP archive", "an snnc model (.snn.h5)", ...
std::string describe(FileKind kind);

// Refuses to replace `path` when it exists and holds a file of another kind than `writing` (an empty
// file is replaceable), unless `overwrite`: snn::Error naming the option, the file, what it holds and
// the way out. `option` is how the path was given ("-o" on the CLI, "path" in Python).
void check_replaceable(const std::string& path, FileKind writing, bool overwrite, const std::string& option = "-o",
                       const std::string& overwrite_hint = "--overwrite");

}  // namespace snn
