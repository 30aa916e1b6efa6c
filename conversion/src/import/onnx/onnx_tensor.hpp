// TensorProto -> OpConstant: float32 (raw_data or float_data); float16, bfloat16 and float64 converted to
// float (with a note); integer types and bool as int64. Other types are refused naming the tensor.
// External data (data_location = EXTERNAL) is read only from a regular file inside the model's folder.
#pragma once
#include <string>
#include <vector>

#include "import/onnx/onnx_model.hpp"
#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion::onnx {

// Most elements one tensor may declare (as elsewhere in snnc).
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

struct TensorSource {
  std::string model_path;          // for messages
  std::string model_dir;           // the folder external data must stay inside
  std::vector<std::string>* notes; // conversions worth recording
};

// `what` names the tensor in messages ("initializer 'conv.weight'"). Throws snn::Error starting with the
// model path.
OpConstant to_constant(const Tensor& t, const TensorSource& src, const std::string& what);

// The external data file `location` inside model_dir, resolved (symlinks followed) and checked to stay
// inside it; throws snn::Error otherwise. Exposed for tests.
std::string resolve_external(const std::string& model_dir, const std::string& location, const std::string& context);

}  // namespace snn::conversion::onnx
