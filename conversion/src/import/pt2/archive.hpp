// Pt2Archive: the layout torch.export.save (torch 2.6 and later) gives its ZIP archive, on top of the
// bounded ZipArchive:
//   <root>/archive_format          "pt2"
//   <root>/archive_version         "0" (absent: 0)
//   <root>/byteorder               "little" (absent: little)
//   <root>/models/<name>.json      the serialized ExportedProgram (schema in program.hpp)
//   <root>/data/weights/<name>_weights_config.json + weight_<i>      raw parameter/buffer storages
//   <root>/data/constants/<name>_constants_config.json + tensor_<i>  lifted tensor constants
//   <root>/data/sample_inputs/<name>.pt   a pickle: ignored
// Accepted: archive format "pt2", archive version 0. Refused by name: the older single-file format
// (serialized_exported_program.json with pickled weights), AOTInductor packages without a program.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "import/zip_archive.hpp"

namespace snn::conversion::pt2 {

ZipOptions pt2_zip_options();

// True when the central directory lists a program: <root>/models/<name>.json next to
// <root>/archive_format, or the older serialized_exported_program.json.
bool holds_exported_program(const ZipArchive& zip);

class Pt2Archive {
 public:
  explicit Pt2Archive(const std::string& path);  // checks format, version and byte order; picks the model
  ZipArchive& zip() { return *zip_; }
  const std::string& model() const { return model_; }       // "model"
  const std::string& root() const { return root_; }         // "m/"
  const ZipEntry* find(const std::string& relative) const;  // root + relative
  // The entry's bytes (CRC-checked); fails naming `what` when the entry is absent or larger than cap.
  std::string read(const std::string& relative, uint64_t cap, const std::string& what);
  nlohmann::json read_json(const std::string& relative);
  std::vector<std::string> notes;

 private:
  void check_format();
  void pick_model();
  std::unique_ptr<ZipArchive> zip_;
  std::string root_, model_;
};

}  // namespace snn::conversion::pt2
