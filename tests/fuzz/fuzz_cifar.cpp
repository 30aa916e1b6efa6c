// snn::load_cifar_binary on one batch file. Input layout: [flags byte][file bytes]; flags bit 0 picks
// CIFAR-100 (two label bytes per record), bits 1-2 the image limit (0: all).
#include "fuzz_util.hpp"
#include "snn/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool cifar100 = data[0] & 1;
  const int64_t limit = (data[0] >> 1) & 3;
  const std::string file = snn_fuzz::write_file("batch.bin", data + 1, size - 1);
  snn_fuzz::expect_only_snn_errors([&] { snn::load_cifar_binary({file}, cifar100, limit); });
  return 0;
}
