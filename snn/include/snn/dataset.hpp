// Labelled image datasets, held in memory as float32 [N, C, H, W] plus int32 labels.
// Readers: IDX (MNIST / Fashion-MNIST; gzip or raw; the labels file is found beside the images file),
// CIFAR-10/100 binary batches, and HDF5 (`images` N×C×H×W uint8 or float32, `labels` N integers).
// uint8 pixels are scaled to [0, 1]; float32 pixels are kept as stored. Normalisation is not applied
// here: it belongs to the model (Network::preprocessing).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/tensor.hpp"

namespace snn {

struct Dataset {
  Tensor images;                // [N, C, H, W]
  std::vector<int32_t> labels;  // N entries, 0..num_classes-1
  int32_t num_classes = 0;      // max label + 1 (at least 1 when N > 0)
  std::string source;           // where it came from, for provenance

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  Shape sample_shape() const;   // [C, H, W]
  // Images [begin, begin+count) as a batch tensor, and their labels.
  Tensor batch_images(int64_t begin, int64_t count) const;
  std::vector<int32_t> batch_labels(int64_t begin, int64_t count) const;
};

// Labels must lie in [0, kMaxClasses): a larger one is a damaged file, not a class.
constexpr int64_t kMaxClasses = int64_t{1} << 20;

// Where Debian's dataset-fashion-mnist package puts the files.
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Where `fashion-mnist:train|test` is read from: $SNNC_FASHION_MNIST_DIR when set, else kFashionMnistDir.
std::string fashion_mnist_dir();

// Opens a dataset from a spec string:
//   fashion-mnist:train | fashion-mnist:test         Debian's Fashion-MNIST (IDX, gzip)
//   PATH-images-idx3-ubyte[.gz]                        IDX images; labels file found beside it
//   PATH.bin  (or cifar10:PATH / cifar100:PATH)       CIFAR binary batch; a directory loads
//                                                        test_batch.bin (cifar10) or test.bin (cifar100)
//   PATH.h5 | PATH.hdf5                               HDF5 with datasets `images` and `labels`
// limit > 0 keeps only the first `limit` images. Errors name the file and what is wrong.
Dataset load_dataset(const std::string& spec, int64_t limit = 0);

// The files a dataset spec reads (images and labels), for refusing an output that would overwrite one.
// Specs that do not resolve give what they can; nothing is opened.
std::vector<std::string> dataset_files(const std::string& spec);

Dataset load_idx(const std::string& images_path, const std::string& labels_path, int64_t limit = 0);
// The labels file that belongs to an IDX images file ("x-images-idx3-ubyte.gz" -> "x-labels-idx1-ubyte.gz").
std::string idx_labels_path_for(const std::string& images_path);
// coarse_and_fine: CIFAR-100 records carry two label bytes (coarse, fine); the fine label is used.
Dataset load_cifar_binary(const std::vector<std::string>& files, bool cifar100, int64_t limit = 0);
Dataset load_hdf5_dataset(const std::string& path, int64_t limit = 0);

}  // namespace snn
