// What parsing untrusted files in a child process costs (isolated_read.hpp): each reader timed with
// isolation on and off, interleaved, on one machine in one run. Prints one JSON object.
//   isolated_read [--repeats N] [--images N]
// Inputs it makes itself: ResNet-18 (ImageNet shapes, 11.7 M parameters, ~47 MB) and VGG (Fashion-MNIST)
// model files, and an HDF5 dataset of N (default 60000) float32 28x28 images (188 MB), the size of
// Fashion-MNIST's training set.
#include <H5Cpp.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <unistd.h>

#include "bench_args.hpp"
#include "bench_networks.hpp"
#include "snn/dataset.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/isolated_read.hpp"
#include "snn/model_file.hpp"

using namespace snn;

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Median seconds of read() with isolation on and off, the two alternating.
nlohmann::json compare(const std::function<void()>& read, int repeats, int64_t bytes) {
  std::vector<double> on, off;
  for (int r = 0; r < repeats; ++r) {
    set_read_isolation(true);
    on.push_back(seconds_of(read));
    set_read_isolation(false);
    off.push_back(seconds_of(read));
  }
  set_read_isolation(true);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {{"file_bytes", bytes}, {"in_process_s", median(off)}, {"isolated_s", median(on)},
          {"overhead_s", median(on) - median(off)}, {"ratio", median(on) / median(off)}};
}

void write_images(const std::string& path, int64_t n) {
  const Tensor images = bench::random_images(n, {1, 28, 28}, 7);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = i % 10;
  h5::write_atomically(path, [&](H5::H5File& f) {
    h5::write_tensor(f, "images", images);
    const hsize_t count = hsize_t(n);
    f.createDataSet("labels", H5::PredType::NATIVE_INT64, H5::DataSpace(1, &count))
        .write(labels.data(), H5::PredType::NATIVE_INT64);
  });
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  int64_t images = 60000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--repeats") repeats = int(bench::parse_int(opt, argv[i + 1], 1));
    else if (opt == "--images") images = bench::parse_int(opt, argv[i + 1], 1);
    else throw std::runtime_error("unknown option " + opt);
  }
  const auto dir = std::filesystem::temp_directory_path() / ("snnc-isolated-read-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  nlohmann::json out = {{"repeats", repeats}};
  for (const char* kind : {"vgg", "resnet18"}) {
    const std::string path = (dir / (std::string(kind) + ".snn.h5")).string();
    save_network(bench::make_bench_network(kind, 1), path);
    out[std::string("model_") + kind] =
        compare([&] { load_network(path); }, repeats, int64_t(std::filesystem::file_size(path)));
  }
  const std::string data = (dir / "images.h5").string();
  write_images(data, images);
  out["dataset"] = compare([&] { load_hdf5_dataset(data); }, repeats, int64_t(std::filesystem::file_size(data)));
  std::filesystem::remove_all(dir);
  std::cout << out.dump(2) << std::endl;
}
