// snn::load_idx on an images file and a labels file (raw or gzip: the reader goes through gzread).
// Input layout: [limit byte][labels length, 2 bytes LE][labels bytes][images bytes]; a labels length
// past the end takes everything. make_seeds.py writes seeds in this layout.
#include <algorithm>

#include "fuzz_util.hpp"
#include "snn/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const int64_t limit = data[0] % 4;  // 0: all images; 1-3: the first few (the limit path)
  const size_t labels_len = std::min<size_t>(size_t(data[1]) | size_t(data[2]) << 8, size - 3);
  const std::string labels = snn_fuzz::write_file("l-labels-idx1-ubyte", data + 3, labels_len);
  const std::string images = snn_fuzz::write_file("l-images-idx3-ubyte", data + 3 + labels_len, size - 3 - labels_len);
  snn_fuzz::expect_only_snn_errors([&] { snn::load_idx(images, labels, limit); });
  return 0;
}
