// Pt2Archive: root folder, archive format/version/byte order, which program to read (see archive.hpp).
#include "import/pt2/archive.hpp"

#include "import/pt2/common.hpp"
#include "import/pt2/json_view.hpp"

namespace snn::conversion::pt2 {

namespace {

const char* kOldFormat = "serialized_exported_program.json";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
bool starts_with(const std::string& s, const std::string& head) { return s.compare(0, head.size(), head) == 0; }

// PyTorch's stream writer puts every record under one folder, named by the first record.
std::string root_of(const ZipArchive& zip) {
  if (zip.entries().empty()) return "";
  const std::string& first = zip.entries().front().name;
  const size_t slash = first.find('/');
  return slash == std::string::npos ? "" : first.substr(0, slash + 1);
}

// models/<name>.json directly under the root: the programs' names.
std::vector<std::string> model_names(const ZipArchive& zip, const std::string& root) {
  std::vector<std::string> names;
  const std::string dir = root + "models/";
  for (const ZipEntry& e : zip.entries()) {
    if (!starts_with(e.name, dir) || !ends_with(e.name, ".json")) continue;
    const std::string name = e.name.substr(dir.size(), e.name.size() - dir.size() - 5);
    if (!name.empty() && name.find('/') == std::string::npos) names.push_back(name);
  }
  return names;
}

bool has_old_format(const ZipArchive& zip) {
  for (const ZipEntry& e : zip.entries())
    if (e.name == kOldFormat || ends_with(e.name, std::string("/") + kOldFormat)) return true;
  return false;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

ZipOptions pt2_zip_options() {
  ZipOptions o;
  o.format = "torch.export";
  o.is_directory = "is a directory, expected a torch.export archive (.pt2)";
  o.not_zip = "not a torch.export archive (not a ZIP file). Save the program with torch.export.save(ep, \"model.pt2\")";
  o.max_entry_size = kMaxWeightBytes;
  return o;
}

bool holds_exported_program(const ZipArchive& zip) {
  if (has_old_format(zip)) return true;
  const std::string root = root_of(zip);
  return zip.find(root + "archive_format") != nullptr && !model_names(zip, root).empty();
}

Pt2Archive::Pt2Archive(const std::string& path) : zip_(std::make_unique<ZipArchive>(path, pt2_zip_options())) {
  if (has_old_format(*zip_))
    fail("a torch.export archive in the older format (serialized_exported_program.json with pickled weights), "
         "which snnc does not read: load it with the torch that wrote it and save it again with torch.export.save "
         "from torch 2.6 or later");
  root_ = root_of(*zip_);
  check_format();
  pick_model();
}

const ZipEntry* Pt2Archive::find(const std::string& relative) const { return zip_->find(root_ + relative); }

std::string Pt2Archive::read(const std::string& relative, uint64_t cap, const std::string& what) {
  const ZipEntry* e = find(relative);
  if (!e) fail("the archive has no " + root_ + relative + " (" + what + ")");
  if (e->uncompressed > cap)
    fail(root_ + relative + " (" + what + ") is " + std::to_string(e->uncompressed) + " bytes, more than the " +
         std::to_string(cap) + " snnc reads");
  return zip_->read(*e);
}

nlohmann::json Pt2Archive::read_json(const std::string& relative) {
  return parse_json(read(relative, kMaxJsonBytes, "JSON"), root_ + relative);
}

void Pt2Archive::check_format() {
  if (!find("archive_format")) {
    if (find("data.pkl") && (find("constants.pkl") || find("code/__torch__.py") || find("version")))
      fail("a TorchScript archive, not a torch.export program (.pt2); save the model with torch.export.save");
    fail("not a torch.export archive (no " + root_ + "archive_format entry). Save the program with torch.export.save");
  }
  const std::string format = trimmed(read("archive_format", 64, "the archive format"));
  if (format != "pt2") fail("archive format '" + format + "' is not 'pt2' (the torch.export archive this snnc reads)");
  if (find("archive_version")) {
    const std::string version = trimmed(read("archive_version", 64, "the archive version"));
    if (version != "0")
      fail("torch.export archive version '" + version + "' is newer than this snnc reads (0); save it with torch <= 2.15");
  }
  if (find("byteorder")) {
    const std::string order = trimmed(read("byteorder", 64, "the byte order"));
    if (order != "little") fail("the weights' byte order is '" + order + "'; snnc reads little-endian archives only");
  }
}

void Pt2Archive::pick_model() {
  const std::vector<std::string> names = model_names(*zip_, root_);
  if (names.empty()) {
    bool aoti = false;
    for (const ZipEntry& e : zip_->entries()) aoti |= starts_with(e.name, root_ + "data/aotinductor/");
    if (aoti)
      fail("an AOTInductor package (compiled code) without an exported program; save the ExportedProgram itself "
           "with torch.export.save");
    fail("the archive holds no exported program (no " + root_ + "models/*.json)");
  }
  model_ = names.front();
  if (names.size() > 1) {
    bool has_model = false;
    std::string list;
    for (const std::string& n : names) has_model |= n == "model", list += (list.empty() ? "" : ", ") + n;
    if (!has_model) fail("the archive holds " + std::to_string(names.size()) + " programs (" + list + "); snnc reads one, named 'model'");
    model_ = "model";
    notes.push_back("the archive holds several programs (" + list + "); read 'model'");
  }
}

}  // namespace snn::conversion::pt2
