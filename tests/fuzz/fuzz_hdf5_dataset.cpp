// snn::load_hdf5_dataset on a whole file (datasets `images` and `labels`). libhdf5 itself is not
// instrumented: coverage feedback stops at its API, and memory errors inside it show up only as crashes.
#include "fuzz_util.hpp"
#include "snn/dataset.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  snn_fuzz::quiet_hdf5();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("data.h5", data, size);
  snn_fuzz::expect_only_snn_errors([&] { snn::load_hdf5_dataset(file); });
  return 0;
}
