// snn::SweepCheckpoint reading a --checkpoint file (rank 0 reads it, then shares what it holds).
#include "fuzz_util.hpp"
#include "snn/sweep_checkpoint.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  snn_fuzz::quiet_hdf5();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = snn_fuzz::write_file("sweep.ckpt.h5", data, size);
  snn_fuzz::expect_only_snn_errors([&] {
    // The job of the committed seeds (tests/fuzz/corpus/fuzz_sweep_checkpoint, tests/fuzz/make_seeds.py),
    // so that inputs whose digest is recomputed get past it to the value checks.
    snn::JobKey job;
    job.add("job", "fuzz-job");
    snn::SweepCheckpoint checkpoint(file, job, snn::single_process());
    checkpoint.find("model");
    checkpoint.find("ftbc", snn::SweepLayout{4, 6, 2, 40, 10});
  });
  return 0;
}
