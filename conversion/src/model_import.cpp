// import_model: the format by content, then its importer (model_import.hpp).
#include "snn/conversion/model_import.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "snn/conversion/import/lower_graph.hpp"
#include "snn/conversion/import/onnx_reader.hpp"
#include "snn/conversion/import/pt2_reader.hpp"
#include "snn/error.hpp"

namespace snn::conversion {

std::string to_string(ModelFormat f) {
  switch (f) {
    case ModelFormat::ExportedProgram: return "torch.export (.pt2)";
    case ModelFormat::Onnx: return "ONNX";
    case ModelFormat::TorchScript: return "TorchScript";
  }
  return "?";
}

TorchScriptHooks& torchscript_hooks() {
  static TorchScriptHooks hooks;
  return hooks;
}

bool torchscript_supported() { return torchscript_hooks().import != nullptr; }

namespace {

std::string head(const std::string& path, size_t n) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw snn::Error(path + ": cannot open the model file (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw snn::Error(path + ": is a directory, not a model file");
  if (!S_ISREG(st.st_mode)) throw snn::Error(path + ": is not a regular file (a device, pipe or socket), not a model file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw snn::Error(path + ": cannot open the model file (" + std::strerror(errno) + ")");
  std::string bytes(n, '\0');
  f.read(bytes.data(), std::streamsize(n));
  bytes.resize(size_t(f.gcount()));
  return bytes;
}

// What a file that is no model looks like, for the message.
std::string looks_like(const std::string& bytes) {
  if (bytes.empty()) return "an empty file";
  if (bytes.compare(0, 8, "\x89HDF\r\n\x1a\n") == 0) return "an HDF5 file (an .snn.h5 model or a dataset?)";
  if (bytes[0] == '\x80') return "a pickle (torch.save of a model or state_dict?)";
  if (bytes.compare(0, 2, "PK") == 0) return "a ZIP archive holding neither TorchScript nor a torch.export program";
  return "not a model file";
}

}  // namespace

ModelFormat detect_model_format(const std::string& path) {
  const std::string bytes = head(path, 64);
  if (bytes.compare(0, 2, "PK") == 0) {
    if (looks_like_exported_program(path)) return ModelFormat::ExportedProgram;
    return ModelFormat::TorchScript;  // the TorchScript check names what is missing if it is not
  }
  if (looks_like_onnx(path)) return ModelFormat::Onnx;
  throw snn::Error(path + ": " + looks_like(bytes) +
                   "; snnc reads torch.export programs (torch.export.save, .pt2), ONNX (torch.onnx.export) "
                   "and TorchScript (torch.jit.script/trace, .save)");
}

ModelFormat check_importable(const std::string& path) {
  const ModelFormat f = detect_model_format(path);
  if (f == ModelFormat::TorchScript && !torchscript_supported())
    throw snn::Error(path + ": a TorchScript model, and this snnc was built without LibTorch; export the model "
                            "with torch.export.save (.pt2) or torch.onnx.export (ONNX), which snnc reads natively, "
                            "or rebuild with LibTorch (CMake: -DSNN_WITH_TORCH=ON; pip: pip install "
                            "--no-build-isolation . in a venv with PyPI's torch)");
  return f;
}

snn::Shape exported_input_shape(const std::string& path) {
  const ModelFormat f = detect_model_format(path);
  if (f == ModelFormat::TorchScript) return {};
  const OpGraph g = f == ModelFormat::Onnx ? read_onnx(path) : read_exported_program(path);
  if (g.input < 0) return {};
  const snn::Shape& s = g.values[size_t(g.input)].shape;
  if (s.size() != 4) return {};
  for (int64_t d : s)
    if (d <= 0) return {};
  return snn::Shape(s.begin() + 1, s.end());
}

snn::Network import_model(const std::string& path, const ImportOptions& options, ImportReport* report) {
  require(options.input_shape.size() == 3,
          path + ": the input shape must be [C, H, W], got " + snn::to_string(options.input_shape));
  ImportReport local;
  ImportReport* rep = report ? report : &local;
  const ModelFormat f = check_importable(path);
  if (f == ModelFormat::TorchScript) {
    snn::Network net = torchscript_hooks().import(path, options, rep);
    rep->format = to_string(f);
    return net;
  }
  const OpGraph g = f == ModelFormat::Onnx ? read_onnx(path) : read_exported_program(path);
  return lower_graph(g, path, options, rep);
}

}  // namespace snn::conversion
