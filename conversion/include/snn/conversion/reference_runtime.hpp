// The reference runtime of the faithfulness check for .pt2 and ONNX models: the model run by its own
// framework (torch for .pt2, onnxruntime for ONNX) on the check images, giving the values of named graph
// values and the model's output. The runtimes are Python packages, so this runs
// conversion/reference/snnc_reference.py in a Python subprocess:
//   interpreter: $SNNC_PYTHON, else the Python snnc was configured with (the project's .venv), else python3
//   script:      $SNNC_REFERENCE_SCRIPT, else <prefix>/share/snnc/snnc_reference.py, else the source tree's
// Where no Python with the runtime is found the conversion goes on and says it was not checked.
#pragma once
#include <string>
#include <vector>

#include "snn/conversion/model_import.hpp"
#include "snn/tensor.hpp"

namespace snn::conversion {

struct ReferenceRun {
  bool ran = false;
  std::string runtime;              // "onnxruntime 1.31.1", "torch 2.15.0"
  std::string why_not;              // when !ran: why there is no reference (no Python, runtime missing, ...)
  std::vector<snn::Tensor> values;  // per requested name: [layer_images, ...], or empty when unavailable
  snn::Tensor output;               // the model's output on every input [N, ...]
};

// Runs `model` on `inputs` [N, C, H, W] (preprocessed); values of `names` on the first `layer_images`.
// Empty names are skipped (their values stay empty). Throws snn::Error only when the inputs cannot be
// handed over (temporary files); a runtime that cannot run the model gives ran = false with the reason.
ReferenceRun run_reference(const std::string& model, ModelFormat format, const snn::Tensor& inputs,
                           int64_t layer_images, const std::vector<std::string>& names);

}  // namespace snn::conversion
