// Model files in, snn::Network out, whatever the format: recognised by content (never by the file's
// name), then read by that format's importer.
//   torch.export ExportedProgram (.pt2)  native reader (pt2_reader.hpp) + lowering (lower_graph.hpp)
//   ONNX (opset 13+)                     native reader (onnx_reader.hpp) + lowering
//   TorchScript (script or trace)        LibTorch (torch_import.hpp), when snnc was built with it
// The native readers need no LibTorch: a build without it converts .pt2 and ONNX files.
#pragma once
#include <string>

#include "snn/conversion/torch_import.hpp"
#include "snn/network.hpp"

namespace snn::conversion {

enum class ModelFormat { ExportedProgram, Onnx, TorchScript };

std::string to_string(ModelFormat f);  // "torch.export (.pt2)", "ONNX", "TorchScript"

// Recognises the format from the file's bytes. Throws snn::Error naming the file when it cannot be read
// or is none of the three (saying what it looks like: a torch.save pickle, an HDF5 file, ...).
ModelFormat detect_model_format(const std::string& path);

// Throws snn::Error naming the file when this build cannot import it (a TorchScript model without the
// TorchScript importer); returns its format otherwise. For callers that check before any work.
ModelFormat check_importable(const std::string& path);

// The image shape [C, H, W] the file was exported for, when the file records one (.pt2, ONNX with a
// static input); empty otherwise.
snn::Shape exported_input_shape(const std::string& path);

// Imports the model at `path` in whichever format it is. report->format names it.
snn::Network import_model(const std::string& path, const ImportOptions& options, ImportReport* report = nullptr);

// True when the TorchScript importer is linked in (snn_torch_import, built when LibTorch is found).
bool torchscript_supported();

// The TorchScript importer's entry points, set by snn_torch_import when it is linked in (its
// register.cpp); null otherwise. snn_conversion reaches LibTorch only through these.
struct TorchScriptHooks {
  snn::Network (*import)(const std::string&, const ImportOptions&, ImportReport*) = nullptr;
  snn::Tensor (*forward)(const std::string&, const snn::Tensor&) = nullptr;
  std::string (*version)() = nullptr;
};
TorchScriptHooks& torchscript_hooks();

}  // namespace snn::conversion
