// snn::import_nir on a whole NIR graph file (nir.write's HDF5 layout): the reader, the graph checks
// (types, edges, cycles) and the parameter checks.
#include "fuzz_util.hpp"
#include "snn/nir_import.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  snn_fuzz::quiet_hdf5();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("graph.nir", data, size);
  snn_fuzz::expect_only_snn_errors([&] { snn::import_nir(file); });
  snn_fuzz::expect_only_snn_errors([&] {
    snn::NirImportOptions o;
    o.dt = 1e-4;  // snnTorch's step: reaches the LIF mapping of its files
    o.input_shape = {1, 28, 28};
    snn::import_nir(file, o);
  });
  return 0;
}
