// snn::conversion::read_onnx on a whole file: the protobuf decoder, the ModelProto subset, tensor data
// and the conversion to an OpGraph (shape arithmetic folding included). Also looks_like_onnx, which reads
// only a prefix. External data is refused or missing here (the file sits alone in a temporary folder).
#include "fuzz_util.hpp"
#include "snn/conversion/import/onnx_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("model.onnx", data, size);
  snn_fuzz::expect_only_snn_errors([&] {
    (void)snn::conversion::looks_like_onnx(file);
    (void)snn::conversion::read_onnx(file);
  });
  return 0;
}
