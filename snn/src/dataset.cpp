// Dataset readers: IDX (gzip or raw, through zlib), CIFAR-10/100 binary batches, HDF5.
// Every error names the file (and, for HDF5, the dataset) and what is wrong with it.
#include "snn/dataset.hpp"

#include <H5Cpp.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "snn/checked_math.hpp"
#include "snn/error.hpp"
#include "snn/hdf5_untrusted.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/image_checks.hpp"
#include "snn/isolated_codecs.hpp"
#include "snn/isolated_read.hpp"
#include "snn/memory.hpp"

namespace fs = std::filesystem;

namespace snn {

// ---------------------------------------------------------------------------------------------------
// Dataset
// ---------------------------------------------------------------------------------------------------

Shape Dataset::sample_shape() const {
  require(images.rank() == 4, "dataset '" + source + "' has images of shape " + to_string(images.shape()) +
                                  " (expected [N, C, H, W])");
  return {images.dim(1), images.dim(2), images.dim(3)};
}

namespace {

void check_batch_range(const Dataset& ds, int64_t begin, int64_t count) {
  require(begin >= 0 && count >= 0 && begin <= ds.size() && count <= ds.size() - begin,
          "batch [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
              ") out of range for dataset '" + ds.source + "' of " + std::to_string(ds.size()) + " images");
}

}  // namespace

Tensor Dataset::batch_images(int64_t begin, int64_t count) const {
  check_batch_range(*this, begin, count);
  return images.slice0(begin, count);
}

std::vector<int32_t> Dataset::batch_labels(int64_t begin, int64_t count) const {
  check_batch_range(*this, begin, count);
  return std::vector<int32_t>(labels.begin() + begin, labels.begin() + begin + count);
}

namespace {

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

void require_file(const std::string& path) {
  std::error_code ec;
  require(fs::exists(path, ec), "dataset file not found: " + path);
  require(!fs::is_directory(path, ec), "dataset path is a directory, expected a file: " + path);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

// Image bytes of `count` images of c x h x w as float32, checked for overflow and against the memory
// available before anything is allocated for them.
void require_image_memory(const std::string& path, int64_t count, int64_t c, int64_t h, int64_t w) {
  const std::string what = path + ": " + std::to_string(count) + " images of " + std::to_string(c) + " x " +
                           std::to_string(h) + " x " + std::to_string(w);
  const int64_t per_image = numel_of({c, h, w});
  const double bytes = double(count) * double(per_image) * double(sizeof(float));
  require(double(count) * double(per_image) <= double(kMaxElements), what + " are more than 2^40 pixels");
  require_memory(bytes, what + " (float32)", "use --limit N to load fewer images");
}

void check_label(int64_t label, const std::string& path, int64_t index) {
  require(label >= 0, path + ": label " + std::to_string(label) + " of image " + std::to_string(index) + " is negative");
  require(label < kMaxClasses, path + ": label " + std::to_string(label) + " of image " +
                                                 std::to_string(index) + " is out of range (labels must be 0.." +
                                                 std::to_string(kMaxClasses - 1) + ")");
}


int32_t num_classes_of(const std::vector<int32_t>& labels) {
  int32_t m = -1;
  for (int32_t l : labels) m = std::max(m, l);
  return m + 1;
}

Tensor to_unit_floats(const std::vector<uint8_t>& bytes, Shape shape) {
  std::vector<float> v(bytes.size());
  // Divide (not multiply by 1/255): bit-identical to PyTorch's `x / 255`, which models were trained on.
  for (size_t i = 0; i < bytes.size(); ++i) v[i] = static_cast<float>(bytes[i]) / 255.0f;
  return Tensor(std::move(shape), std::move(v));
}

// A gzip-or-raw file read through zlib.
class GzReader {
 public:
  explicit GzReader(std::string path) : path_(std::move(path)) {
    require_file(path_);
    f_ = gzopen(path_.c_str(), "rb");
    require(f_ != nullptr, path_ + ": cannot open for reading");
    gzbuffer(f_, 1 << 18);
  }
  ~GzReader() {
    if (f_) gzclose(f_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes into out (appending); returns how many were read. Stops early only at the end.
  int64_t read(std::vector<uint8_t>& out, int64_t n) {
    int64_t total = 0;
    constexpr int64_t kChunk = int64_t{1} << 22;
    while (total < n) {
      const int64_t want = std::min(kChunk, n - total);
      const size_t old = out.size();
      out.resize(old + static_cast<size_t>(want));  // grows only as data arrives: a bogus header can't OOM us
      const int got = gzread(f_, out.data() + old, static_cast<unsigned>(want));
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(f_, &errnum);
        out.resize(old);
        std::string detail = msg ? msg : "zlib error";
        if (starts_with(detail, path_ + ": ")) detail.erase(0, path_.size() + 2);  // zlib prefixes the path
        throw Error(path_ + ": cannot decompress: " + detail);
      }
      out.resize(old + static_cast<size_t>(got));
      total += got;
      if (got < want) break;
    }
    return total;
  }

  uint32_t read_be32(const char* what) {
    std::vector<uint8_t> b;
    const int64_t got = read(b, 4);
    require(got == 4, path_ + ": truncated: file ends inside the IDX header (" + what + ")");
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile f_ = nullptr;
};

constexpr uint32_t kIdxImagesMagic = 0x00000803;  // uint8, 3 dimensions
constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // uint8, 1 dimension

std::string idx_magic_problem(uint32_t magic, uint32_t expected, const char* what) {
  std::string msg = "wrong magic number " + hex32(magic) + " (expected " + hex32(expected) + ", " + what + ")";
  if ((magic >> 16) != 0) msg += "; not an IDX file";
  else if (((magic >> 8) & 0xFF) != 0x08) msg += "; element type is not uint8";
  else msg += "; wrong number of dimensions (" + std::to_string(magic & 0xFF) + ")";
  return msg;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// IDX
// ---------------------------------------------------------------------------------------------------

std::string idx_labels_path_for(const std::string& images_path) {
  fs::path p(images_path);
  std::string name = p.filename().string();
  size_t pos = name.find("images-idx3");
  std::string replacement = "labels-idx1";
  if (pos == std::string::npos) {
    pos = name.find("images.idx3");  // some MNIST copies use a dot
    replacement = "labels.idx1";
  }
  require(pos != std::string::npos, images_path +
                                        ": cannot find the IDX labels file: the file name does not contain "
                                        "'images-idx3' (expected e.g. 'train-images-idx3-ubyte.gz')");
  name.replace(pos, replacement.size(), replacement);
  const std::string candidate = (p.parent_path() / name).string();
  if (is_regular_file(candidate)) return candidate;
  const std::string other = ends_with(candidate, ".gz") ? candidate.substr(0, candidate.size() - 3) : candidate + ".gz";
  if (is_regular_file(other)) return other;
  return candidate;
}

Dataset load_idx(const std::string& images_path, const std::string& labels_path, int64_t limit) {
  // Images header.
  GzReader img(images_path);
  const uint32_t magic = img.read_be32("magic number");
  require(magic == kIdxImagesMagic,
          images_path + ": " + idx_magic_problem(magic, kIdxImagesMagic, "IDX uint8 images N x H x W"));
  const uint32_t n32 = img.read_be32("image count");
  const uint32_t h32 = img.read_be32("image height");
  const uint32_t w32 = img.read_be32("image width");
  require(h32 > 0 && w32 > 0 && h32 <= 65536 && w32 <= 65536,
          images_path + ": implausible image size " + std::to_string(h32) + " x " + std::to_string(w32));
  const int64_t n = n32, h = h32, w = w32;

  // Labels header.
  require(is_regular_file(labels_path), "dataset file not found: " + labels_path + " (the IDX labels file for " +
                                            images_path + ")");
  GzReader lab(labels_path);
  const uint32_t lmagic = lab.read_be32("magic number");
  require(lmagic == kIdxLabelsMagic,
          labels_path + ": " + idx_magic_problem(lmagic, kIdxLabelsMagic, "IDX uint8 labels"));
  const int64_t nl = lab.read_be32("label count");
  require(nl == n, labels_path + ": " + std::to_string(nl) + " labels, but the images file " + images_path +
                       " holds " + std::to_string(n) + " images");

  const int64_t keep = (limit > 0) ? std::min<int64_t>(limit, n) : n;
  require_image_memory(images_path, keep, 1, h, w);

  // All labels (cheap), so that num_classes describes the whole file, not the kept prefix.
  std::vector<uint8_t> lbytes;
  lbytes.reserve(static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 24)));
  const int64_t lgot = lab.read(lbytes, n);
  require(lgot == n, labels_path + ": truncated: expected " + std::to_string(n) + " label bytes, found " +
                         std::to_string(lgot));

  // Pixels of the kept images only.
  const int64_t want = keep * h * w;
  std::vector<uint8_t> pixels;
  const int64_t got = img.read(pixels, want);
  require(got == want, images_path + ": truncated: expected " + std::to_string(want) + " pixel bytes, found " +
                           std::to_string(got));

  Dataset ds;
  ds.labels.assign(lbytes.begin(), lbytes.end());
  ds.num_classes = num_classes_of(ds.labels);
  ds.labels.resize(static_cast<size_t>(keep));
  ds.images = to_unit_floats(pixels, {keep, 1, h, w});
  ds.source = images_path;
  return ds;
}

// ---------------------------------------------------------------------------------------------------
// CIFAR binary
// ---------------------------------------------------------------------------------------------------

Dataset load_cifar_binary(const std::vector<std::string>& files, bool cifar100, int64_t limit) {
  require(!files.empty(), std::string("no ") + (cifar100 ? "CIFAR-100" : "CIFAR-10") + " files given");
  constexpr int64_t kPixels = 3 * 32 * 32;
  const int64_t label_bytes = cifar100 ? 2 : 1;
  const int64_t record = label_bytes + kPixels;
  const int max_label = cifar100 ? 99 : 9;
  const char* kind = cifar100 ? "CIFAR-100" : "CIFAR-10";

  std::vector<uint8_t> pixels;
  std::vector<int32_t> all_labels;
  int64_t kept = 0;
  std::vector<uint8_t> buf(static_cast<size_t>(record));
  for (const std::string& path : files) {
    require_file(path);
    std::error_code ec;
    const auto size = static_cast<int64_t>(fs::file_size(path, ec));
    require(!ec, path + ": cannot read the file size: " + ec.message());
    if (size % record != 0) {
      std::string msg = path + ": size " + std::to_string(size) + " bytes is not a multiple of the " + kind +
                        " record size " + std::to_string(record) + " (" + std::to_string(label_bytes) +
                        (cifar100 ? " label bytes" : " label byte") + " + 3072 pixel bytes)";
      const int64_t other = (cifar100 ? 1 : 2) + kPixels;
      if (size > 0 && size % other == 0)
        msg += std::string("; is it a ") + (cifar100 ? "CIFAR-10 file? use cifar10:PATH" : "CIFAR-100 file? use cifar100:PATH");
      throw Error(msg);
    }
    const int64_t records = size / record;
    std::ifstream in(path, std::ios::binary);
    require(static_cast<bool>(in), path + ": cannot open for reading");
    for (int64_t r = 0; r < records; ++r) {
      const bool keep = limit <= 0 || kept < limit;
      const int64_t want = keep ? record : label_bytes;
      in.read(reinterpret_cast<char*>(buf.data()), want);
      require(in.gcount() == want, path + ": truncated: record " + std::to_string(r) + " could not be read");
      const int label = buf[static_cast<size_t>(label_bytes - 1)];  // CIFAR-100: fine label (second byte)
      require(label <= max_label, path + ": record " + std::to_string(r) + " has label " + std::to_string(label) +
                                      " (" + kind + " labels are 0.." + std::to_string(max_label) + ")");
      all_labels.push_back(label);
      if (keep) {
        pixels.insert(pixels.end(), buf.begin() + label_bytes, buf.end());
        ++kept;
      } else {
        in.seekg(kPixels, std::ios::cur);
      }
    }
  }

  Dataset ds;
  ds.num_classes = num_classes_of(all_labels);
  all_labels.resize(static_cast<size_t>(kept));
  ds.labels = std::move(all_labels);
  ds.images = to_unit_floats(pixels, {kept, 3, 32, 32});
  ds.source = files.front();
  for (size_t i = 1; i < files.size(); ++i) ds.source += "," + files[i];
  return ds;
}

// ---------------------------------------------------------------------------------------------------
// HDF5
// ---------------------------------------------------------------------------------------------------

namespace {
// All of the labels (small), so that num_classes describes the whole file.
std::vector<int32_t> read_hdf5_labels(const H5::H5File& file, const std::string& path) {
  H5::DataSet lset = file.openDataSet("labels");
  require(lset.getTypeClass() == H5T_INTEGER,
          path + ": dataset 'labels' must hold integers");
  H5::DataSpace lspace = lset.getSpace();
  const int lrank = lspace.getSimpleExtentNdims();
  std::vector<hsize_t> ldims(static_cast<size_t>(std::max(lrank, 0)));
  if (lrank > 0) lspace.getSimpleExtentDims(ldims.data());
  require(lrank == 1 || (lrank == 2 && ldims[1] == 1),
          path + ": dataset 'labels' must be one-dimensional (N), found rank " + std::to_string(lrank));
  const auto nl = static_cast<int64_t>(ldims[0]);
  require(lset.getIntType().getSize() <= 8, path + ": dataset 'labels' has integers wider than 64 bits");
  h5::require_own_storage(lset, nl, path + ": dataset 'labels'");
  require_memory(double(nl) * 12.0, path + ": dataset 'labels' (" + std::to_string(nl) + " entries)", "");
  // Read as int64 so that no value is clamped on the way (2^40 must be an error, not 2^31 - 1).
  std::vector<int64_t> wide(static_cast<size_t>(nl));
  if (nl > 0) lset.read(wide.data(), H5::PredType::NATIVE_INT64);
  std::vector<int32_t> labels(static_cast<size_t>(nl));
  for (int64_t i = 0; i < nl; ++i) {
    check_label(wide[size_t(i)], path + " (dataset 'labels')", i);
    labels[size_t(i)] = int32_t(wide[size_t(i)]);
  }
  return labels;
}

Dataset read_hdf5_dataset(const std::string& path, int64_t limit) {
  H5::Exception::dontPrint();
  std::string current = "";  // the dataset being read, for error messages
  try {
    require(H5::H5File::isHdf5(path), path + ": not an HDF5 file");
    H5::H5File file = h5::open_untrusted(path);
    for (const char* name : {"images", "labels"})
      require(file.nameExists(name), path + ": missing dataset '" + std::string(name) +
                                         "' (expected 'images' N x C x H x W and 'labels' N integers)");

    // Labels: all of them (small), so num_classes describes the whole file.
    current = "labels";
    std::vector<int32_t> labels = read_hdf5_labels(file, path);
    const auto nl = static_cast<int64_t>(labels.size());

    // Images.
    current = "images";
    H5::DataSet iset = file.openDataSet("images");
    H5::DataSpace ispace = iset.getSpace();
    const int rank = ispace.getSimpleExtentNdims();
    require(rank == 3 || rank == 4, path + ": dataset 'images' must have rank 4 (N x C x H x W) or 3 (N x H x W), found rank " +
                                        std::to_string(rank));
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    ispace.getSimpleExtentDims(dims.data());
    const auto n = static_cast<int64_t>(dims[0]);
    const int64_t c = rank == 4 ? static_cast<int64_t>(dims[1]) : 1;
    const auto h = static_cast<int64_t>(dims[static_cast<size_t>(rank - 2)]);
    const auto w = static_cast<int64_t>(dims[static_cast<size_t>(rank - 1)]);
    require(nl == n, path + ": dataset 'labels' has " + std::to_string(nl) + " entries but dataset 'images' has " +
                         std::to_string(n) + " images");

    const H5T_class_t cls = iset.getTypeClass();
    bool is_uint8 = false;
    if (cls == H5T_INTEGER) {
      H5::IntType t = iset.getIntType();
      is_uint8 = t.getSize() == 1 && t.getSign() == H5T_SGN_NONE;
    }
    require(is_uint8 || cls == H5T_FLOAT, path + ": dataset 'images' must hold uint8 or float32 values");

    const int64_t keep = (limit > 0) ? std::min(limit, n) : n;
    require_image_memory(path, keep, c, h, w);
    h5::require_own_storage(iset, keep * c * h * w, path + ": dataset 'images'");
    const int64_t count = keep * c * h * w;
    H5::DataSpace mem(1, std::vector<hsize_t>{static_cast<hsize_t>(count)}.data());
    if (keep < n) {
      std::vector<hsize_t> start(static_cast<size_t>(rank), 0), cnt = dims;
      cnt[0] = static_cast<hsize_t>(keep);
      ispace.selectHyperslab(H5S_SELECT_SET, cnt.data(), start.data());
    }

    Dataset ds;
    if (is_uint8) {
      std::vector<uint8_t> bytes(static_cast<size_t>(count));
      if (count > 0) iset.read(bytes.data(), H5::PredType::NATIVE_UINT8, mem, ispace);
      ds.images = to_unit_floats(bytes, {keep, c, h, w});
    } else {
      std::vector<float> v(static_cast<size_t>(count));
      if (count > 0) iset.read(v.data(), H5::PredType::NATIVE_FLOAT, mem, ispace);
      check_finite_pixels(v.data(), int64_t(v.size()), c * h * w, path + " (dataset 'images')");
      ds.images = Tensor({keep, c, h, w}, std::move(v));
    }
    ds.num_classes = num_classes_of(labels);
    labels.resize(static_cast<size_t>(keep));
    ds.labels = std::move(labels);
    ds.source = path;
    return ds;
  } catch (const H5::Exception& e) {
    std::string msg = path + ": HDF5 error";
    if (!current.empty()) msg += " reading dataset '" + current + "'";
    const std::string detail = e.getDetailMsg();
    const std::string cause = h5::error_stack_text();
    msg += ": " + (cause.empty() ? detail : cause);
    throw Error(msg);
  }
}
}  // namespace

Dataset load_hdf5_dataset(const std::string& path, int64_t limit) {
  require_file(path);
  // Parsed in a child process: a crash inside libhdf5 cannot take snnc with it (isolated_read.hpp).
  return decode_dataset(read_isolated(path, [&] { return encode_dataset(read_hdf5_dataset(path, limit)); }));
}

// ---------------------------------------------------------------------------------------------------
// Specs
// ---------------------------------------------------------------------------------------------------

namespace {

Dataset with_source(Dataset ds, const std::string& spec) {
  ds.source = spec;
  return ds;
}

Dataset load_cifar_spec(const std::string& spec, const std::string& path, bool cifar100, int64_t limit) {
  require(!path.empty(), "dataset '" + spec + "': missing path after '" + (cifar100 ? "cifar100:" : "cifar10:") + "'");
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) file = (fs::path(path) / (cifar100 ? "test.bin" : "test_batch.bin")).string();
  require_file(file);
  return with_source(load_cifar_binary({file}, cifar100, limit), spec);
}

}  // namespace

std::string fashion_mnist_dir() {
  const char* env = std::getenv("SNNC_FASHION_MNIST_DIR");
  return env && *env ? std::string(env) : std::string(kFashionMnistDir);
}

Dataset load_dataset(const std::string& spec, int64_t limit) {
  const std::string kFm = "fashion-mnist:";
  if (starts_with(spec, kFm)) {
    const std::string split = spec.substr(kFm.size());
    require(split == "train" || split == "test", "unknown Fashion-MNIST split '" + split + "' in dataset '" + spec +
                                                     "' (expected fashion-mnist:train or fashion-mnist:test)");
    const std::string images =
        fashion_mnist_dir() + (split == "train" ? "/train-images-idx3-ubyte.gz" : "/t10k-images-idx3-ubyte.gz");
    const std::string labels = idx_labels_path_for(images);
    for (const std::string& f : {images, labels})
      require(is_regular_file(f), "Fashion-MNIST file not found: " + f +
                                      " (install the Debian package dataset-fashion-mnist)");
    return with_source(load_idx(images, labels, limit), spec);
  }
  if (starts_with(spec, "cifar10:")) return load_cifar_spec(spec, spec.substr(8), false, limit);
  if (starts_with(spec, "cifar100:")) return load_cifar_spec(spec, spec.substr(9), true, limit);

  const std::string name = lower(fs::path(spec).filename().string());
  enum class Format { kIdx, kCifar10, kHdf5, kUnknown } format = Format::kUnknown;
  if (name.find("idx3-ubyte") != std::string::npos) format = Format::kIdx;
  else if (ends_with(name, ".bin")) format = Format::kCifar10;
  else if (ends_with(name, ".h5") || ends_with(name, ".hdf5")) format = Format::kHdf5;

  if (format == Format::kUnknown) {
    std::string hint;
    if (name.find("idx1-ubyte") != std::string::npos) hint = "; this looks like an IDX labels file: give the images file";
    throw Error("cannot tell the format of dataset '" + spec +
                "' (expected fashion-mnist:train, fashion-mnist:test, cifar10:PATH, cifar100:PATH, "
                "PATH-images-idx3-ubyte[.gz], PATH.bin, PATH.h5 or PATH.hdf5)" + hint);
  }
  require_file(spec);
  switch (format) {
    case Format::kIdx: return with_source(load_idx(spec, idx_labels_path_for(spec), limit), spec);
    case Format::kCifar10: return with_source(load_cifar_binary({spec}, false, limit), spec);
    case Format::kHdf5: return with_source(load_hdf5_dataset(spec, limit), spec);
    default: break;
  }
  throw Error("cannot tell the format of dataset '" + spec + "'");
}

std::vector<std::string> dataset_files(const std::string& spec) {
  const std::string kFm = "fashion-mnist:";
  std::vector<std::string> files;
  std::string images;
  if (starts_with(spec, kFm)) {
    images = fashion_mnist_dir() + (spec.substr(kFm.size()) == "train" ? "/train-images-idx3-ubyte.gz"
                                                                        : "/t10k-images-idx3-ubyte.gz");
  } else if (starts_with(spec, "cifar10:") || starts_with(spec, "cifar100:")) {
    const std::string path = spec.substr(spec.find(':') + 1);
    std::error_code ec;
    if (fs::is_directory(path, ec))
      for (const char* f : {"test_batch.bin", "test.bin"}) files.push_back((fs::path(path) / f).string());
    else
      files.push_back(path);
    return files;
  } else if (lower(fs::path(spec).filename().string()).find("idx3-ubyte") != std::string::npos) {
    images = spec;
  } else {
    return {spec};
  }
  files.push_back(images);
  if (images.find("images-idx3") != std::string::npos || images.find("images.idx3") != std::string::npos)
    files.push_back(idx_labels_path_for(images));
  return files;
}

}  // namespace snn
