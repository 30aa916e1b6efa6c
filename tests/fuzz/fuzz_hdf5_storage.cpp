// snn::h5::open_untrusted: the walk over every link and dataset of an HDF5 file that refuses values kept
// outside it (external storage, virtual datasets, soft and external links) and sizes the file cannot hold
// (snn/hdf5_untrusted.hpp). Every reader of HDF5 input goes through it first.
#include "fuzz_util.hpp"
#include "snn/hdf5_untrusted.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  snn_fuzz::quiet_hdf5();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("storage.h5", data, size);
  snn_fuzz::expect_only_snn_errors([&] {
    try {
      snn::h5::open_untrusted(file);
    } catch (const H5::Exception&) {
      // Opening a file that is not HDF5 at all: the readers turn this into their own error.
    }
  });
  return 0;
}
