// snn::conversion::read_exported_program and looks_like_exported_program on a whole .pt2 file: the ZIP
// reader, the program JSON, the weights and the ATen mappings, all from untrusted bytes.
#include "fuzz_util.hpp"
#include "snn/conversion/import/pt2_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("model.pt2", data, size);
  snn_fuzz::expect_only_snn_errors([&] {
    if (snn::conversion::looks_like_exported_program(file)) snn::conversion::read_exported_program(file);
  });
  snn_fuzz::expect_only_snn_errors([&] { snn::conversion::read_exported_program(file); });
  return 0;
}
