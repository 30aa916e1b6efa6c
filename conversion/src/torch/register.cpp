// Hands import_model (model_import.hpp) the TorchScript importer's entry points when this object
// library is linked in: snn_conversion itself never links LibTorch.
#include "snn/conversion/model_import.hpp"
#include "snn/conversion/torch_import.hpp"

namespace snn::conversion {
namespace {

const bool registered = [] {
  TorchScriptHooks& h = torchscript_hooks();
  h.import = &import_torchscript;
  h.forward = &torchscript_forward;
  h.version = &libtorch_version;
  return true;
}();

}  // namespace
}  // namespace snn::conversion
