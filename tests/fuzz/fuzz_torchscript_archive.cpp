// snn::conversion::check_torchscript_archive on a whole .pt file: the ZIP parser that runs before
// LibTorch sees a model.
#include "fuzz_util.hpp"
#include "snn/conversion/torchscript_archive.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("model.pt", data, size);
  snn_fuzz::expect_only_snn_errors([&] { snn::conversion::check_torchscript_archive(file); });
  return 0;
}
