// Dataset readers: IDX (raw and gzip), CIFAR-10/100 binary, HDF5, specs, and the Debian Fashion-MNIST files.
#include <H5Cpp.h>
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "snn/dataset.hpp"
#include "test_util.hpp"
#include "snn/error.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using snn::Dataset;

namespace {

// A fresh, empty directory for one test's fixture files.
std::string fixture_dir(const std::string& name) {
  const fs::path dir = fs::path(SNN_BINARY_DIR) / "test_tmp" / "dataset" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

using Bytes = std::vector<uint8_t>;

void write_raw(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

void write_gz(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

Bytes idx_images(uint32_t n, uint32_t h, uint32_t w, const Bytes& pixels, uint32_t magic = 0x00000803) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, n);
  put_be32(b, h);
  put_be32(b, w);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

Bytes idx_labels(const Bytes& labels, uint32_t magic = 0x00000801) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, static_cast<uint32_t>(labels.size()));
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

// 3 images of 2x2 pixels with labels 3, 0, 7.
const Bytes kIdxPixels = {0, 51, 102, 255,   // image 0
                          255, 255, 0, 0,    // image 1
                          10, 20, 30, 204};  // image 2
const Bytes kIdxLabels = {3, 0, 7};

// The CIFAR pixel value of image i, channel c, row y, column x in our fixtures.
uint8_t cifar_px(int i, int c, int y, int x) { return static_cast<uint8_t>((i * 50 + c * 70 + y * 3 + x) % 256); }

Bytes cifar_records(const std::vector<Bytes>& label_bytes, int first_image = 0) {
  Bytes b;
  for (size_t r = 0; r < label_bytes.size(); ++r) {
    b.insert(b.end(), label_bytes[r].begin(), label_bytes[r].end());
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) b.push_back(cifar_px(first_image + static_cast<int>(r), c, y, x));
  }
  return b;
}

float at(const Dataset& ds, int64_t i, int64_t c, int64_t y, int64_t x) {
  const auto& s = ds.images.shape();
  return ds.images[((i * s[1] + c) * s[2] + y) * s[3] + x];
}

template <typename T>
void h5_write(H5::H5File& f, const std::string& name, const H5::PredType& file_type, const H5::PredType& mem_type,
              const std::vector<hsize_t>& dims, const std::vector<T>& data) {
  H5::DataSpace space(static_cast<int>(dims.size()), dims.data());
  H5::DataSet ds = f.createDataSet(name, file_type, space);
  ds.write(data.data(), mem_type);
}

}  // namespace

TEST_CASE("IDX images and labels, raw and gzip", "[dataset]") {
  const std::string dir = fixture_dir("idx");
  const bool gz = GENERATE(false, true);
  const std::string suffix = gz ? ".gz" : "";
  const std::string images = dir + "/tiny-images-idx3-ubyte" + suffix;
  const std::string labels = dir + "/tiny-labels-idx1-ubyte" + suffix;
  if (gz) {
    write_gz(images, idx_images(3, 2, 2, kIdxPixels));
    write_gz(labels, idx_labels(kIdxLabels));
  } else {
    write_raw(images, idx_images(3, 2, 2, kIdxPixels));
    write_raw(labels, idx_labels(kIdxLabels));
  }
  INFO("gzip: " << gz);
  REQUIRE(snn::idx_labels_path_for(images) == labels);

  SECTION("everything") {
    const Dataset ds = snn::load_dataset(images);
    REQUIRE(ds.images.shape() == snn::Shape{3, 1, 2, 2});
    REQUIRE(ds.size() == 3);
    REQUIRE(ds.sample_shape() == snn::Shape{1, 2, 2});
    REQUIRE(ds.labels == std::vector<int32_t>{3, 0, 7});
    REQUIRE(ds.num_classes == 8);
    REQUIRE(ds.source == images);
    REQUIRE(at(ds, 0, 0, 0, 0) == 0.0f);
    REQUIRE(at(ds, 0, 0, 0, 1) == Approx(0.2f));
    REQUIRE(at(ds, 0, 0, 1, 0) == Approx(0.4f));
    REQUIRE(at(ds, 0, 0, 1, 1) == 1.0f);
    REQUIRE(at(ds, 1, 0, 0, 1) == 1.0f);
    REQUIRE(at(ds, 1, 0, 1, 0) == 0.0f);
    REQUIRE(at(ds, 2, 0, 1, 1) == Approx(0.8f));
  }
  SECTION("limit keeps the first images") {
    const Dataset ds = snn::load_idx(images, labels, 2);
    REQUIRE(ds.images.shape() == snn::Shape{2, 1, 2, 2});
    REQUIRE(ds.labels == std::vector<int32_t>{3, 0});
    REQUIRE(ds.num_classes == 8);  // from the whole labels file
    REQUIRE(ds.images[7] == 0.0f);
    REQUIRE(ds.images[4] == 1.0f);
  }
  SECTION("a limit larger than the file keeps everything") {
    const Dataset ds = snn::load_dataset(images, 100);
    REQUIRE(ds.size() == 3);
    REQUIRE(ds.images.shape() == snn::Shape{3, 1, 2, 2});
  }
  SECTION("batches") {
    const Dataset ds = snn::load_dataset(images);
    const snn::Tensor b = ds.batch_images(1, 2);
    REQUIRE(b.shape() == snn::Shape{2, 1, 2, 2});
    REQUIRE(b[0] == 1.0f);
    REQUIRE(b[7] == Approx(0.8f));
    REQUIRE(ds.batch_labels(1, 2) == std::vector<int32_t>{0, 7});
    REQUIRE(ds.batch_labels(3, 0).empty());
    REQUIRE_THROWS_WITH(ds.batch_images(2, 2), Contains("out of range"));
    REQUIRE_THROWS_WITH(ds.batch_labels(-1, 1), Contains("out of range"));
    REQUIRE_THROWS_AS(ds.batch_labels(0, 4), snn::Error);
  }
}

TEST_CASE("IDX labels file found beside the images file", "[dataset]") {
  const std::string dir = fixture_dir("idx_beside");
  REQUIRE(snn::idx_labels_path_for(dir + "/train-images-idx3-ubyte.gz") == dir + "/train-labels-idx1-ubyte.gz");
  REQUIRE(snn::idx_labels_path_for("a/t10k-images-idx3-ubyte") == "a/t10k-labels-idx1-ubyte");
  // Only the directory name contains the pattern: the file name is what counts.
  REQUIRE_THROWS_WITH(snn::idx_labels_path_for("images-idx3/foo.gz"), Contains("foo.gz") && Contains("does not contain"));

  // Gzip images, raw labels: the reader finds the labels without ".gz".
  write_gz(dir + "/mix-images-idx3-ubyte.gz", idx_images(3, 2, 2, kIdxPixels));
  write_raw(dir + "/mix-labels-idx1-ubyte", idx_labels(kIdxLabels));
  REQUIRE(snn::idx_labels_path_for(dir + "/mix-images-idx3-ubyte.gz") == dir + "/mix-labels-idx1-ubyte");
  const Dataset ds = snn::load_dataset(dir + "/mix-images-idx3-ubyte.gz");
  REQUIRE(ds.labels == std::vector<int32_t>{3, 0, 7});

  // Raw images, gzip labels.
  write_raw(dir + "/mix2-images-idx3-ubyte", idx_images(3, 2, 2, kIdxPixels));
  write_gz(dir + "/mix2-labels-idx1-ubyte.gz", idx_labels(kIdxLabels));
  REQUIRE(snn::load_dataset(dir + "/mix2-images-idx3-ubyte").labels == std::vector<int32_t>{3, 0, 7});

  // No labels file at all.
  write_raw(dir + "/lonely-images-idx3-ubyte", idx_images(3, 2, 2, kIdxPixels));
  REQUIRE_THROWS_WITH(snn::load_dataset(dir + "/lonely-images-idx3-ubyte"),
                      Contains("not found") && Contains("lonely-labels-idx1-ubyte"));
}

TEST_CASE("IDX errors name the file", "[dataset]") {
  const std::string dir = fixture_dir("idx_errors");
  const std::string labels = dir + "/bad-labels-idx1-ubyte";
  write_raw(labels, idx_labels(kIdxLabels));
  const std::string images = dir + "/bad-images-idx3-ubyte";

  SECTION("truncated pixels") {
    Bytes px(kIdxPixels.begin(), kIdxPixels.begin() + 10);
    write_raw(images, idx_images(3, 2, 2, px));
    REQUIRE_THROWS_WITH(snn::load_dataset(images),
                        Contains(images) && Contains("truncated") && Contains("expected 12 pixel bytes, found 10"));
    // The first two images are all there: a limit that needs only them works.
    REQUIRE(snn::load_dataset(images, 2).size() == 2);
  }
  SECTION("truncated gzip pixels") {
    const std::string gzimages = dir + "/badgz-images-idx3-ubyte.gz";
    write_gz(dir + "/badgz-labels-idx1-ubyte.gz", idx_labels(kIdxLabels));
    Bytes px(kIdxPixels.begin(), kIdxPixels.begin() + 5);
    write_gz(gzimages, idx_images(3, 2, 2, px));
    REQUIRE_THROWS_WITH(snn::load_dataset(gzimages), Contains(gzimages) && Contains("truncated"));
  }
  SECTION("truncated header") {
    Bytes b = idx_images(3, 2, 2, {});
    b.resize(9);
    write_raw(images, b);
    REQUIRE_THROWS_WITH(snn::load_dataset(images), Contains(images) && Contains("truncated"));
  }
  SECTION("truncated labels") {
    write_raw(images, idx_images(3, 2, 2, kIdxPixels));
    Bytes lb = idx_labels(kIdxLabels);
    lb.pop_back();
    write_raw(labels, lb);
    REQUIRE_THROWS_WITH(snn::load_dataset(images), Contains(labels) && Contains("truncated"));
  }
  SECTION("wrong magic in the images file") {
    write_raw(images, idx_images(3, 2, 2, kIdxPixels, 0x00000801));
    REQUIRE_THROWS_WITH(snn::load_dataset(images), Contains(images) && Contains("magic") && Contains("0x00000801"));
  }
  SECTION("not an IDX file at all") {
    write_raw(images, Bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!', '!', '!', '!'});
    REQUIRE_THROWS_WITH(snn::load_dataset(images), Contains(images) && Contains("magic"));
  }
  SECTION("wrong magic in the labels file") {
    write_raw(images, idx_images(3, 2, 2, kIdxPixels));
    write_raw(labels, idx_labels(kIdxLabels, 0x00000803));
    REQUIRE_THROWS_WITH(snn::load_dataset(images), Contains(labels) && Contains("magic"));
  }
  SECTION("label count differs from image count") {
    write_raw(images, idx_images(3, 2, 2, kIdxPixels));
    write_raw(labels, idx_labels({1, 2}));
    REQUIRE_THROWS_WITH(snn::load_dataset(images),
                        Contains(labels) && Contains(images) && Contains("2 labels") && Contains("3 images"));
  }
  SECTION("corrupt gzip stream") {
    const std::string gzimages = dir + "/corrupt-images-idx3-ubyte.gz";
    write_gz(dir + "/corrupt-labels-idx1-ubyte.gz", idx_labels(kIdxLabels));
    // A gzip header followed by garbage.
    write_raw(gzimages, Bytes{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03});
    REQUIRE_THROWS_WITH(snn::load_dataset(gzimages), Contains(gzimages) && Contains("cannot decompress"));
  }
}

TEST_CASE("CIFAR-10 and CIFAR-100 binary batches", "[dataset]") {
  const std::string dir = fixture_dir("cifar");

  SECTION("CIFAR-10") {
    const std::string file = dir + "/data_batch_1.bin";
    write_raw(file, cifar_records({{6}, {9}, {0}}));
    const Dataset ds = snn::load_dataset(file);
    REQUIRE(ds.images.shape() == snn::Shape{3, 3, 32, 32});
    REQUIRE(ds.sample_shape() == snn::Shape{3, 32, 32});
    REQUIRE(ds.labels == std::vector<int32_t>{6, 9, 0});
    REQUIRE(ds.num_classes == 10);
    REQUIRE(ds.source == file);
    // Channel-major: R plane, then G, then B.
    for (int i : {0, 1, 2})
      for (int c : {0, 1, 2})
        for (auto yx : {std::pair<int, int>{0, 0}, {0, 31}, {5, 7}, {31, 31}})
          REQUIRE(at(ds, i, c, yx.first, yx.second) ==
                  Approx(cifar_px(i, c, yx.first, yx.second) / 255.0f).margin(1e-6));
    REQUIRE(at(ds, 0, 0, 0, 0) == 0.0f);
    REQUIRE(at(ds, 0, 1, 0, 0) == Approx(70 / 255.0f));
    REQUIRE(at(ds, 1, 2, 0, 0) == Approx(190 / 255.0f));

    const Dataset two = snn::load_dataset(file, 2);
    REQUIRE(two.images.shape() == snn::Shape{2, 3, 32, 32});
    REQUIRE(two.labels == std::vector<int32_t>{6, 9});
    REQUIRE(two.num_classes == 10);
    REQUIRE(two.images.values() == std::vector<float>(ds.images.values().begin(),
                                                      ds.images.values().begin() + 2 * 3072));

    // cifar10:DIR loads DIR/test_batch.bin.
    write_raw(dir + "/test_batch.bin", cifar_records({{4}, {2}}));
    const Dataset t = snn::load_dataset("cifar10:" + dir);
    REQUIRE(t.labels == std::vector<int32_t>{4, 2});
    REQUIRE(t.source == "cifar10:" + dir);
    REQUIRE(snn::load_dataset("cifar10:" + file).labels == std::vector<int32_t>{6, 9, 0});
  }
  SECTION("CIFAR-100 uses the fine label") {
    const std::string file = dir + "/test.bin";
    write_raw(file, cifar_records({{3, 42}, {19, 7}}));
    const Dataset ds = snn::load_dataset("cifar100:" + dir);
    REQUIRE(ds.images.shape() == snn::Shape{2, 3, 32, 32});
    REQUIRE(ds.labels == std::vector<int32_t>{42, 7});
    REQUIRE(ds.num_classes == 43);
    REQUIRE(at(ds, 1, 0, 0, 0) == Approx(50 / 255.0f));
    REQUIRE(at(ds, 1, 2, 31, 31) == Approx(cifar_px(1, 2, 31, 31) / 255.0f));
    REQUIRE(snn::load_dataset("cifar100:" + file, 1).labels == std::vector<int32_t>{42});
  }
  SECTION("several files concatenate") {
    write_raw(dir + "/a.bin", cifar_records({{1}, {2}}, 0));
    write_raw(dir + "/b.bin", cifar_records({{3}}, 2));
    const Dataset ds = snn::load_cifar_binary({dir + "/a.bin", dir + "/b.bin"}, false);
    REQUIRE(ds.labels == std::vector<int32_t>{1, 2, 3});
    REQUIRE(ds.images.shape() == snn::Shape{3, 3, 32, 32});
    REQUIRE(at(ds, 2, 1, 4, 4) == Approx(cifar_px(2, 1, 4, 4) / 255.0f));
    const Dataset lim = snn::load_cifar_binary({dir + "/a.bin", dir + "/b.bin"}, false, 2);
    REQUIRE(lim.labels == std::vector<int32_t>{1, 2});
    REQUIRE(lim.num_classes == 4);
  }
  SECTION("errors") {
    const std::string bad = dir + "/bad.bin";
    Bytes b = cifar_records({{1}, {2}});
    b.resize(b.size() - 100);
    write_raw(bad, b);
    REQUIRE_THROWS_WITH(snn::load_dataset(bad), Contains(bad) && Contains("not a multiple") && Contains("3073"));

    const std::string c100 = dir + "/c100.bin";
    write_raw(c100, cifar_records({{1, 2}, {3, 4}, {5, 6}}));
    REQUIRE_THROWS_WITH(snn::load_dataset(c100), Contains(c100) && Contains("cifar100:"));

    const std::string badlabel = dir + "/badlabel.bin";
    write_raw(badlabel, cifar_records({{1}, {12}}));
    REQUIRE_THROWS_WITH(snn::load_dataset(badlabel), Contains(badlabel) && Contains("label 12"));

    REQUIRE_THROWS_WITH(snn::load_dataset("cifar10:" + dir + "/nothing-here"),
                        Contains("not found") && Contains("nothing-here"));
    const std::string empty_dir = fixture_dir("cifar_empty");
    REQUIRE_THROWS_WITH(snn::load_dataset("cifar100:" + empty_dir), Contains(empty_dir + "/test.bin"));
  }
}

TEST_CASE("HDF5 datasets", "[dataset]") {
  const std::string dir = fixture_dir("hdf5");

  SECTION("uint8 images, int64 labels") {
    const std::string path = dir + "/u8.h5";
    {
      H5::H5File f(path, H5F_ACC_TRUNC);
      std::vector<uint8_t> px(3 * 1 * 2 * 3);
      for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 15);  // 0, 15, ..., 255
      h5_write(f, "images", H5::PredType::STD_U8LE, H5::PredType::NATIVE_UINT8, {3, 1, 2, 3}, px);
      h5_write(f, "labels", H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64, {3},
               std::vector<int64_t>{2, 11, 5});
    }
    const Dataset ds = snn::load_dataset(path);
    REQUIRE(ds.images.shape() == snn::Shape{3, 1, 2, 3});
    REQUIRE(ds.labels == std::vector<int32_t>{2, 11, 5});
    REQUIRE(ds.num_classes == 12);
    REQUIRE(ds.source == path);
    REQUIRE(ds.images[0] == 0.0f);
    REQUIRE(ds.images[1] == Approx(15 / 255.0f));
    REQUIRE(ds.images[17] == 1.0f);

    const Dataset one = snn::load_hdf5_dataset(path, 1);
    REQUIRE(one.images.shape() == snn::Shape{1, 1, 2, 3});
    REQUIRE(one.labels == std::vector<int32_t>{2});
    REQUIRE(one.num_classes == 12);
    REQUIRE(one.images[5] == Approx(75 / 255.0f));
  }
  SECTION("float32 images kept as stored, uint16 labels") {
    const std::string path = dir + "/f32.hdf5";
    std::vector<float> px(2 * 3 * 2 * 2);
    for (size_t i = 0; i < px.size(); ++i) px[i] = -1.5f + 0.25f * static_cast<float>(i);
    {
      H5::H5File f(path, H5F_ACC_TRUNC);
      h5_write(f, "images", H5::PredType::IEEE_F32LE, H5::PredType::NATIVE_FLOAT, {2, 3, 2, 2}, px);
      h5_write(f, "labels", H5::PredType::STD_U16LE, H5::PredType::NATIVE_UINT16, {2},
               std::vector<uint16_t>{1, 0});
    }
    const Dataset ds = snn::load_dataset(path);
    REQUIRE(ds.images.shape() == snn::Shape{2, 3, 2, 2});
    REQUIRE(ds.images.values() == px);
    REQUIRE(ds.labels == std::vector<int32_t>{1, 0});
    REQUIRE(ds.num_classes == 2);
    const Dataset one = snn::load_dataset(path, 1);
    REQUIRE(one.images.shape() == snn::Shape{1, 3, 2, 2});
    REQUIRE(one.images.values() == std::vector<float>(px.begin(), px.begin() + 12));
  }
  SECTION("rank-3 images get one channel") {
    const std::string path = dir + "/r3.h5";
    {
      H5::H5File f(path, H5F_ACC_TRUNC);
      h5_write(f, "images", H5::PredType::STD_U8LE, H5::PredType::NATIVE_UINT8, {2, 2, 2},
               std::vector<uint8_t>{0, 51, 102, 153, 204, 255, 0, 0});
      h5_write(f, "labels", H5::PredType::STD_I32LE, H5::PredType::NATIVE_INT32, {2}, std::vector<int32_t>{0, 1});
    }
    const Dataset ds = snn::load_dataset(path);
    REQUIRE(ds.images.shape() == snn::Shape{2, 1, 2, 2});
    REQUIRE(ds.images[3] == Approx(0.6f));
    REQUIRE(ds.images[5] == 1.0f);
  }
  SECTION("errors") {
    const std::string nolabels = dir + "/nolabels.h5";
    {
      H5::H5File f(nolabels, H5F_ACC_TRUNC);
      h5_write(f, "images", H5::PredType::STD_U8LE, H5::PredType::NATIVE_UINT8, {1, 1, 1, 1}, std::vector<uint8_t>{1});
    }
    REQUIRE_THROWS_WITH(snn::load_dataset(nolabels), Contains(nolabels) && Contains("'labels'"));

    const std::string negative = dir + "/negative.h5";
    {
      H5::H5File f(negative, H5F_ACC_TRUNC);
      h5_write(f, "images", H5::PredType::STD_U8LE, H5::PredType::NATIVE_UINT8, {2, 1, 1, 1},
               std::vector<uint8_t>{1, 2});
      h5_write(f, "labels", H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64, {2}, std::vector<int64_t>{0, -3});
    }
    REQUIRE_THROWS_WITH(snn::load_dataset(negative), Contains(negative) && Contains("negative") && Contains("-3"));

    const std::string mismatch = dir + "/mismatch.h5";
    {
      H5::H5File f(mismatch, H5F_ACC_TRUNC);
      h5_write(f, "images", H5::PredType::STD_U8LE, H5::PredType::NATIVE_UINT8, {2, 1, 1, 1},
               std::vector<uint8_t>{1, 2});
      h5_write(f, "labels", H5::PredType::STD_I32LE, H5::PredType::NATIVE_INT32, {3}, std::vector<int32_t>{0, 1, 2});
    }
    REQUIRE_THROWS_WITH(snn::load_dataset(mismatch), Contains(mismatch) && Contains("3 entries") && Contains("2 images"));

    const std::string badrank = dir + "/badrank.h5";
    {
      H5::H5File f(badrank, H5F_ACC_TRUNC);
      h5_write(f, "images", H5::PredType::STD_U8LE, H5::PredType::NATIVE_UINT8, {2, 3}, std::vector<uint8_t>(6));
      h5_write(f, "labels", H5::PredType::STD_I32LE, H5::PredType::NATIVE_INT32, {2}, std::vector<int32_t>{0, 1});
    }
    REQUIRE_THROWS_WITH(snn::load_dataset(badrank), Contains(badrank) && Contains("'images'") && Contains("rank"));

    const std::string i16 = dir + "/int16.h5";
    {
      H5::H5File f(i16, H5F_ACC_TRUNC);
      h5_write(f, "images", H5::PredType::STD_I16LE, H5::PredType::NATIVE_INT16, {1, 1, 1, 2},
               std::vector<int16_t>{1, 2});
      h5_write(f, "labels", H5::PredType::STD_I32LE, H5::PredType::NATIVE_INT32, {1}, std::vector<int32_t>{0});
    }
    REQUIRE_THROWS_WITH(snn::load_dataset(i16), Contains(i16) && Contains("uint8 or float32"));

    const std::string group = dir + "/group.h5";
    {
      H5::H5File f(group, H5F_ACC_TRUNC);
      f.createGroup("images");
      h5_write(f, "labels", H5::PredType::STD_I32LE, H5::PredType::NATIVE_INT32, {1}, std::vector<int32_t>{0});
    }
    REQUIRE_THROWS_WITH(snn::load_dataset(group), Contains(group) && Contains("dataset 'images'"));

    const std::string fake = dir + "/fake.h5";
    write_raw(fake, Bytes{'n', 'o', 't', ' ', 'h', 'd', 'f', '5', '\n'});
    REQUIRE_THROWS_WITH(snn::load_dataset(fake), Contains(fake) && Contains("not an HDF5 file"));
  }
}

TEST_CASE("Fashion-MNIST test set from the Debian package", "[dataset]") {
  if (!fs::is_directory(snn::kFashionMnistDir)) {
    WARN("skipped: " << snn::kFashionMnistDir << " is absent (Debian package dataset-fashion-mnist)");
    SUCCEED();
    return;
  }
  const Dataset ds = snn::load_dataset("fashion-mnist:test");
  REQUIRE(ds.source == "fashion-mnist:test");
  REQUIRE(ds.size() == 10000);
  REQUIRE(ds.images.shape() == snn::Shape{10000, 1, 28, 28});
  REQUIRE(ds.sample_shape() == snn::Shape{1, 28, 28});
  REQUIRE(ds.num_classes == 10);
  std::vector<int> per_class(10, 0);
  for (int32_t l : ds.labels) {
    REQUIRE(l >= 0);
    REQUIRE(l <= 9);
    ++per_class[static_cast<size_t>(l)];
  }
  REQUIRE(per_class == std::vector<int>(10, 1000));
  const auto mm = std::minmax_element(ds.images.values().begin(), ds.images.values().end());
  REQUIRE(*mm.first == 0.0f);
  REQUIRE(*mm.second == 1.0f);
  double sum = 0;
  for (float v : ds.images.values()) sum += v;
  const double mean = sum / static_cast<double>(ds.images.numel());
  REQUIRE(mean > 0.2);  // Fashion-MNIST's mean pixel is about 0.286
  REQUIRE(mean < 0.4);

  const Dataset few = snn::load_dataset("fashion-mnist:test", 5);
  REQUIRE(few.images.shape() == snn::Shape{5, 1, 28, 28});
  REQUIRE(few.labels == std::vector<int32_t>(ds.labels.begin(), ds.labels.begin() + 5));
  REQUIRE(few.images.values() == std::vector<float>(ds.images.values().begin(), ds.images.values().begin() + 5 * 784));
}

TEST_CASE("Dataset specs: unknown formats and missing files", "[dataset]") {
  REQUIRE_THROWS_WITH(snn::load_dataset("data/foo.csv"),
                      Contains("cannot tell the format of dataset 'data/foo.csv'") && Contains("expected"));
  REQUIRE_THROWS_WITH(snn::load_dataset("train-labels-idx1-ubyte.gz"), Contains("labels file"));
  REQUIRE_THROWS_WITH(snn::load_dataset("fashion-mnist:validation"),
                      Contains("validation") && Contains("fashion-mnist:train"));
  const std::string dir = fixture_dir("missing");
  for (const std::string& missing :
       {dir + "/nope-images-idx3-ubyte.gz", dir + "/nope.bin", dir + "/nope.h5", dir + "/nope.hdf5"})
    REQUIRE_THROWS_WITH(snn::load_dataset(missing), Contains("dataset file not found: " + missing));
  REQUIRE_THROWS_WITH(snn::load_idx(dir + "/a-images-idx3-ubyte", dir + "/a-labels-idx1-ubyte"),
                      Contains("not found") && Contains(dir + "/a-images-idx3-ubyte"));
  REQUIRE_THROWS_WITH(snn::load_hdf5_dataset(dir), Contains(dir));
  REQUIRE_THROWS_AS(snn::load_dataset(""), snn::Error);

  Dataset empty;
  REQUIRE_THROWS_AS(empty.sample_shape(), snn::Error);
  REQUIRE_THROWS_WITH(empty.batch_images(0, 1), Contains("out of range"));
}

TEST_CASE("SNNC_FASHION_MNIST_DIR moves where fashion-mnist:* is read from", "[dataset]") {
  const std::string dir = snn_test::temp_path("fmnist_dir");
  fs::remove_all(dir);
  fs::create_directories(dir);
  ::setenv("SNNC_FASHION_MNIST_DIR", dir.c_str(), 1);
  REQUIRE(snn::fashion_mnist_dir() == dir);
  REQUIRE_THROWS_WITH(snn::load_dataset("fashion-mnist:test"), Catch::Contains(dir + "/t10k-images-idx3-ubyte.gz"));
  ::unsetenv("SNNC_FASHION_MNIST_DIR");
  REQUIRE(snn::fashion_mnist_dir() == snn::kFashionMnistDir);
  fs::remove_all(dir);
}

TEST_CASE("HDF5 datasets: labels, pixels and sizes are validated before use", "[dataset]") {
  using Catch::Contains;
  const std::string dir = snn_test::temp_path("dataset_validation");
  fs::create_directories(dir);
  auto write_set = [](const std::string& path, const std::vector<float>& pixels, const std::vector<int64_t>& labels) {
    H5::H5File f(path, H5F_ACC_TRUNC);
    h5_write(f, "images", H5::PredType::IEEE_F32LE, H5::PredType::NATIVE_FLOAT,
             {hsize_t(labels.size()), 1, 1, hsize_t(pixels.size() / labels.size())}, pixels);
    h5_write(f, "labels", H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64, {hsize_t(labels.size())}, labels);
  };
  SECTION("a label beyond int32 is refused, not clamped") {
    const std::string path = dir + "/big_label.h5";
    write_set(path, {0.1f, 0.2f, 0.3f, 0.4f}, {1, int64_t{1} << 40});
    REQUIRE_THROWS_WITH(snn::load_dataset(path), Contains(path) && Contains("1099511627776") &&
                                                     Contains("image 1") && Contains("out of range"));
  }
  SECTION("NaN and Inf pixels are refused with the image named") {
    const std::string path = dir + "/nan.h5";
    write_set(path, {0.1f, 0.2f, 0.3f, std::numeric_limits<float>::quiet_NaN()}, {0, 1});
    REQUIRE_THROWS_WITH(snn::load_dataset(path), Contains(path) && Contains("image 1") && Contains("NaN"));
    write_set(path, {std::numeric_limits<float>::infinity(), 0.2f, 0.3f, 0.4f}, {0, 1});
    REQUIRE_THROWS_WITH(snn::load_dataset(path), Contains("image 0") && Contains("infinite"));
  }
  SECTION("images declared far larger than memory are refused up front, even with a limit") {
    const std::string path = dir + "/huge.h5";
    {
      H5::H5File f(path, H5F_ACC_TRUNC);
      hsize_t dims[4] = {1000000, 1, 100000, 100000}, chunk[4] = {1, 1, 64, 64};
      H5::DSetCreatPropList plist;
      plist.setChunk(4, chunk);
      f.createDataSet("images", H5::PredType::STD_U8LE, H5::DataSpace(4, dims), plist);  // never written
      h5_write(f, "labels", H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64, {1000000},
               std::vector<int64_t>(1000000, 0));
    }
    // The storage rules (hdf5_untrusted.hpp) refuse it before the memory check: it stores nothing.
    REQUIRE_THROWS_WITH(snn::load_dataset(path, 50), Contains(path) && Contains("'/images'") &&
                                                         Contains("stores 0 bytes") && Contains("never written"));
  }
}
