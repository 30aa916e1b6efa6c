// read_onnx / looks_like_onnx (snn/conversion/import/onnx_reader.hpp): the file's bytes, the protobuf
// parse (errors as "PATH: not a valid ONNX model (...)"), then the conversion to an OpGraph.
#include "snn/conversion/import/onnx_reader.hpp"

#include <sys/stat.h>

#include <fstream>

#include "import/onnx/onnx_convert.hpp"
#include "import/onnx/onnx_model.hpp"
#include "import/onnx/protobuf_wire.hpp"
#include "snn/error.hpp"

namespace snn::conversion {

namespace {

constexpr uint64_t kMaxModelBytes = uint64_t(4) << 30;  // 4 GiB: bigger models keep weights as external data

uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw snn::Error(path + ": cannot open the model file (it does not exist?)");
  if (!S_ISREG(st.st_mode)) throw snn::Error(path + ": not a regular file");
  return uint64_t(st.st_size);
}

std::string read_bytes(const std::string& path, uint64_t limit) {
  const uint64_t size = file_size(path);
  if (size > limit)
    throw snn::Error(path + ": the model file is " + std::to_string(size >> 20) + " MiB; snnc reads ONNX files up to " +
                     std::to_string(limit >> 30) + " GiB (save larger models with external data)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw snn::Error(path + ": cannot open the model file");
  std::string bytes(size_t(size), '\0');
  in.read(bytes.data(), std::streamsize(size));
  if (!in) throw snn::Error(path + ": cannot read the model file");
  return bytes;
}

}  // namespace

OpGraph read_onnx(const std::string& path) {
  const std::string bytes = read_bytes(path, kMaxModelBytes);
  onnx::Model model;
  try {
    model = onnx::parse_model(bytes);
  } catch (const pb::WireError& e) {
    throw snn::Error(path + ": not a valid ONNX model (" + e.what() + "); the file is truncated or not ONNX");
  }
  if (!model.has_graph || model.ir_version <= 0)
    throw snn::Error(path + ": not a valid ONNX model (no " + std::string(model.has_graph ? "ir_version" : "graph") +
                     "); the file is truncated or not ONNX");
  return onnx::Converter(path, model).run();
}

bool looks_like_onnx(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string prefix(size_t(std::min<uint64_t>(uint64_t(st.st_size), 1 << 16)), '\0');
  in.read(prefix.data(), std::streamsize(prefix.size()));
  if (!in) return false;
  return onnx::looks_like_model(prefix, uint64_t(st.st_size));
}

}  // namespace snn::conversion
