// The whole conversion of a CNN, as `snnc convert` and the Python bindings run it: import in any format
// (model_import.hpp; BN folded), thresholds of the ReLU neurons from data, the faithfulness check against
// the format's own runtime (layer by layer, then the logits end to end: LibTorch for TorchScript, torch
// or onnxruntime through reference_runtime.hpp for .pt2 / ONNX), and the provenance recorded in the
// network's metadata. Where no reference runtime is installed the model still converts and the
// provenance says it was not checked. Nothing is saved here: the caller writes the network once every
// step has succeeded.
#pragma once
#include <string>
#include <vector>

#include "snn/backend.hpp"
#include "snn/conversion/faithfulness.hpp"
#include "snn/conversion/thresholds.hpp"
#include "snn/conversion/torch_import.hpp"
#include "snn/dataset.hpp"
#include "snn/network.hpp"

namespace snn::conversion {

struct ConvertOptions {
  snn::Shape input_shape;           // [C, H, W]; empty: the data's image shape
  snn::Preprocessing preprocessing;  // the normalisation the CNN was trained with (stored in the model)
  snn::NeuronConfig neuron;
  NormOptions norm;                 // thresholds of ReLU neurons (max_images: how many of the data's images)
  bool check = true;                // the faithfulness check (strongly recommended)
  FaithfulnessOptions faithfulness;
  int64_t check_images = 16;        // images for the layer-by-layer check (logits: up to 256)
  std::string data_label;           // how the data is named in messages and provenance (e.g. its spec)
  std::string data_option = "--data";  // how the caller's users pass data, for the messages that ask for it
};

struct ConversionResult {
  snn::Network network;
  ImportReport import;
  ThresholdReport thresholds;       // empty when no layer needed data thresholds
  FaithfulnessReport faithfulness;  // meaningful when checked
  bool checked = false;
  std::string norm_text;            // how the thresholds were set, one line
  std::string check_inputs_text;    // what the faithfulness check ran on, one line
  std::vector<std::string> notes;   // what the importer and the threshold selection want the user to know
  std::string format;               // the model file's format ("ONNX", ...)
  std::string reference_runtime;    // what the check compared with ("onnxruntime 1.31.1", "LibTorch 2.15.0")
  std::string unchecked_reason;     // check requested but no reference runtime ran: why
};

// Converts the model at `model_path` (.pt2, ONNX or TorchScript, recognised by content). `data` (may be null when every threshold comes from
// the model: clip, QCFS) gives the ReLU thresholds and the check's images (random N(0,1) inputs
// without it). Throws snn::Error naming the file, the layer or the option; on a failed faithfulness
// check, the error says where the import departs from LibTorch.
ConversionResult convert_model(const std::string& model_path, const snn::Dataset* data, snn::Backend& backend,
                               const ConvertOptions& options);
// The former name, when TorchScript was the only format.
inline ConversionResult convert_torchscript(const std::string& model_path, const snn::Dataset* data,
                                            snn::Backend& backend, const ConvertOptions& options) {
  return convert_model(model_path, data, backend, options);
}

}  // namespace snn::conversion
