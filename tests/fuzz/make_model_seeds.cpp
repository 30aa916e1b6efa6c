// Writes the seed corpus of fuzz_model_file: small .snn.h5 networks covering the layer kinds the loader
// reads (conv, neuron with ReLU/QCFS, avg/max pooling, residual add, flatten, linear, preprocessing,
// metadata). Built with the fuzz targets; run by hand after a model format change:
//     build-fuzz/tests/fuzz/make_model_seeds tests/fuzz/corpus/fuzz_model_file
#include <cstdio>
#include <filesystem>
#include <random>

#include "snn/model_file.hpp"
#include "test_util.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  std::mt19937 rng(7);
  snn::Network relu = snn_test::small_cnn(rng);
  relu.metadata()["source_model"] = "seed";
  snn::save_network(relu, dir + "/relu.snn.h5");
  snn::Network qcfs = snn_test::small_cnn(rng, snn::SourceActivation::QCFS, 4, /*maxpool=*/true, /*residual=*/true);
  qcfs.set_preprocessing({{0.5f, 0.4f}, {0.25f, 0.3f}});
  snn::save_network(qcfs, dir + "/qcfs_residual.snn.h5");
  std::printf("seeds written under %s\n", dir.c_str());
  return 0;
}
