// check_torchscript_archive: the archive checks of import/zip_archive.hpp (every record bounds-checked,
// every entry's sizes and CRC-32 verified by streaming, nothing allocated by a size the file claims),
// then the layout LibTorch expects of a TorchScript archive.
#include "snn/conversion/torchscript_archive.hpp"

#include <vector>

#include "import/zip_archive.hpp"
#include "snn/error.hpp"

namespace snn::conversion {

namespace {

ZipOptions torchscript_options() {
  ZipOptions o;
  o.format = "TorchScript";
  o.is_directory = "is a directory, expected a TorchScript model file (.pt)";
  o.not_zip =
      "not a TorchScript archive (not a ZIP file: a legacy torch.save pickle or not a PyTorch file at all). "
      "Export the model with torch.jit.script or torch.jit.trace and .save() it";
  return o;
}

// What LibTorch expects: every record under one top-level directory named by the first entry, with
// data.pkl (the module's state) and constants.pkl or code/ (what torch.jit.save adds to torch.save).
void check_torchscript_layout(const ZipArchive& zip) {
  const std::string not_ts = "not a TorchScript archive";
  const std::vector<ZipEntry>& entries = zip.entries();
  if (entries.empty()) zip.fail(not_ts + " (an empty ZIP archive)");
  const std::string& first = entries.front().name;
  const size_t slash = first.find('/');
  if (slash == std::string::npos || slash == 0) zip.fail(not_ts + " (its first entry '" + first + "' is not in a directory)");
  const std::string prefix = first.substr(0, slash + 1);
  bool data = false, constants = false, code = false;
  for (const ZipEntry& e : entries) {
    if (e.name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = e.name.substr(prefix.size());
    data |= rest == "data.pkl";
    constants |= rest == "constants.pkl";
    code |= rest.compare(0, 5, "code/") == 0;
  }
  if (!data) zip.fail(not_ts + " (no " + prefix + "data.pkl)");
  if (!constants && !code)
    zip.fail(not_ts + " (no " + prefix + "constants.pkl or " + prefix +
             "code/: saved with torch.save? export with torch.jit.script or torch.jit.trace and save that)");
}

}  // namespace

void check_torchscript_archive(const std::string& path) {
  ZipArchive zip(path, torchscript_options());
  zip.verify_all();
  // Last: a name damaged in the central directory is reported as damage (its local header disagrees),
  // not as a missing data.pkl.
  check_torchscript_layout(zip);
}

}  // namespace snn::conversion
