// snn::load_network on a whole .snn.h5 model file (layers, weights, metadata, versions 1 and 2).
#include "fuzz_util.hpp"
#include "snn/model_file.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  snn_fuzz::quiet_hdf5();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("model.snn.h5", data, size);
  snn_fuzz::expect_only_snn_errors([&] { snn::load_network(file); });
  return 0;
}
