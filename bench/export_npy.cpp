// Exports a .snn.h5 model (and optionally a dataset) as plain .npy files plus a JSON manifest, so that
// bench/torch_reference.py can read them with numpy alone (machines without h5py).
//
//   export_npy MODEL.snn.h5 OUTDIR [--data SPEC [--limit N] [--uint8] [--data-h5]]
//
// OUTDIR/manifest.json:
//   format "snnc-npy-export", format_version 1, source (the model path), snnc_version,
//   model_format_version, input_shape, preprocessing {mean, std} or null, metadata {string: string},
//   nodes: [{index, type, name, inputs (node indices, -1 = network input), numbers {key: number},
//            strings {key: string}, tensors {key: {shape, dtype "<f4", file}}}]   (Layer::to_record())
//   data (with --data): {source, images {file, shape, dtype}, labels {file, shape, dtype}, num_classes}
// OUTDIR/NNNN_<key>.npy: each layer tensor, float32 little-endian, .npy format 1.0, C order.
// With --data SPEC (any spec snnc's load_dataset takes: fashion-mnist:test, IDX, CIFAR, HDF5) and
// --limit N (first N images; 0 = all): OUTDIR/images.npy (float32 N x C x H x W, pixels in [0,1] as
// snnc loads them; with --uint8, uint8 = round(pixel*255), refused unless every pixel is exactly k/255,
// which torch_reference.py turns back into float(k)/255 bit for bit) and OUTDIR/labels.npy (int64 N).
// --data-h5 also writes OUTDIR/data.h5 (the same images and labels as an HDF5 dataset for snnc --data).
//
// Atomic: everything is written into a fresh OUTDIR.tmp-<pid> directory that is renamed to OUTDIR at
// the end. An existing OUTDIR is replaced only when it is empty or an earlier export (its manifest.json
// says format "snnc-npy-export"); anything else is refused. Prints one JSON summary on stdout.
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_h5.hpp"
#include "snn/dataset.hpp"
#include "snn/model_file.hpp"
#include "snn/network.hpp"

namespace fs = std::filesystem;
using namespace snn;

namespace {

const char* kUsage = "usage: export_npy MODEL.snn.h5 OUTDIR [--data SPEC [--limit N] [--uint8] [--data-h5]]";
constexpr const char* kFormat = "snnc-npy-export";

[[noreturn]] void usage_error(const std::string& msg) { throw std::runtime_error(msg + "\n" + kUsage); }

bool little_endian() {
  const uint16_t x = 1;
  unsigned char c;
  std::memcpy(&c, &x, 1);
  return c == 1;
}

// The .npy 1.0 header for a C-order array: magic, version, header length, the dict padded with spaces
// and ended by '\n' so that the data starts at a multiple of 64 bytes.
std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape) {
  std::ostringstream dict;
  dict << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) dict << shape[i] << (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  dict << "), }";
  std::string h = dict.str();
  const size_t unpadded = 10 + h.size() + 1;
  h.append((64 - unpadded % 64) % 64, ' ');
  h.push_back('\n');
  if (h.size() > 65535) throw std::runtime_error("npy header too long");
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(char(h.size() & 0xff));
  out.push_back(char((h.size() >> 8) & 0xff));
  return out + h;
}

template <class T>
void write_npy(const fs::path& path, const std::string& descr, const std::vector<int64_t>& shape, const T* data,
               size_t count) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (size_t(n) != count) throw std::runtime_error("write_npy: shape does not match the element count");
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot create " + path.string());
  const std::string header = npy_header(descr, shape);
  f.write(header.data(), std::streamsize(header.size()));
  if (little_endian()) {
    f.write(reinterpret_cast<const char*>(data), std::streamsize(count * sizeof(T)));
  } else {
    std::vector<char> buf(count * sizeof(T));
    for (size_t i = 0; i < count; ++i)
      for (size_t b = 0; b < sizeof(T); ++b)
        buf[i * sizeof(T) + b] = reinterpret_cast<const char*>(data + i)[sizeof(T) - 1 - b];
    f.write(buf.data(), std::streamsize(buf.size()));
  }
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path.string() + " (disk full?)");
}

std::string safe_key(const std::string& k) {
  std::string s;
  for (char c : k) s.push_back((std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_');
  return s.empty() ? "tensor" : s;
}

std::string index4(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "%04d", i);
  return b;
}

nlohmann::json number_json(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");  // JSON has no non-finite numbers
}

// An existing OUTDIR may be replaced only if it is empty or an earlier export.
bool replaceable(const fs::path& dir) {
  if (!fs::is_directory(dir)) return false;
  if (fs::is_empty(dir)) return true;
  std::ifstream f(dir / "manifest.json");
  if (!f) return false;
  try {
    const nlohmann::json m = nlohmann::json::parse(f);
    return m.value("format", "") == kFormat;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> pos;
  std::string data_spec;
  int64_t limit = 0;
  bool as_uint8 = false, data_h5 = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--data") data_spec = next();
    else if (a == "--limit") {
      const std::string v = next();
      size_t used = 0;
      try {
        limit = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size() || limit < 0) usage_error("--limit: not a count: '" + v + "'");
    } else if (a == "--uint8") as_uint8 = true;
    else if (a == "--data-h5") data_h5 = true;
    else if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') usage_error("unknown option " + a);
    else pos.push_back(a);
  }
  if (pos.size() != 2) usage_error("need MODEL.snn.h5 and OUTDIR");
  if (data_spec.empty() && (limit || as_uint8 || data_h5)) usage_error("--limit, --uint8 and --data-h5 need --data");
  const std::string model_path = pos[0];
  fs::path outdir = fs::path(pos[1]);
  while (outdir.has_filename() == false && outdir.has_parent_path() && outdir != outdir.root_path())
    outdir = outdir.parent_path();  // "dir/" -> "dir"
  if (outdir.empty() || outdir.filename() == "." || outdir.filename() == "..")
    usage_error("OUTDIR must name a directory to create, got '" + pos[1] + "'");
  if (fs::exists(outdir) && !replaceable(outdir))
    throw std::runtime_error(outdir.string() + " exists and is not an earlier export (no manifest.json with format \"" +
                             kFormat + "\"): refusing to replace it");
  {
    std::error_code ec;
    const fs::path mp = fs::weakly_canonical(fs::absolute(model_path), ec);
    const fs::path od = fs::weakly_canonical(fs::absolute(outdir), ec);
    if (!ec && (mp == od || mp.string().rfind(od.string() + "/", 0) == 0))
      throw std::runtime_error("the model " + model_path + " lies inside OUTDIR " + outdir.string());
  }
  const fs::path parent = outdir.has_parent_path() ? outdir.parent_path() : fs::path(".");
  if (!fs::is_directory(parent)) throw std::runtime_error("directory " + parent.string() + " does not exist");

  const Network net = load_network(model_path);
  Dataset data;
  if (!data_spec.empty()) {
    data = load_dataset(data_spec, limit);
    if (data.size() == 0) throw std::runtime_error("dataset '" + data_spec + "' holds no images");
    if (data.sample_shape() != net.input_shape())
      throw std::runtime_error("dataset '" + data_spec + "' has images " + to_string(data.sample_shape()) +
                               " but the network takes " + to_string(net.input_shape()));
  }

  const fs::path tmp = parent / (outdir.filename().string() + ".tmp-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp);
  nlohmann::json summary;
  try {
    nlohmann::json m;
    m["format"] = kFormat;
    m["format_version"] = 1;
    m["source"] = model_path;
    m["snnc_version"] = snnc_version();
    m["model_format_version"] = kModelFormatVersion;
    m["input_shape"] = net.input_shape();
    if (net.preprocessing().identity()) {
      m["preprocessing"] = nullptr;
    } else {
      m["preprocessing"] = {{"mean", net.preprocessing().mean}, {"std", net.preprocessing().std}};
    }
    m["metadata"] = net.metadata();
    nlohmann::json nodes = nlohmann::json::array();
    int64_t files = 0, floats = 0;
    for (int i = 0; i < net.size(); ++i) {
      const LayerRecord r = net.layer(i).to_record();
      nlohmann::json nd;
      nd["index"] = i;
      nd["type"] = r.type;
      nd["name"] = r.name;
      nd["inputs"] = net.inputs(i);
      nlohmann::json nums = nlohmann::json::object(), strs = nlohmann::json::object(),
                     tens = nlohmann::json::object();
      for (const auto& [k, v] : r.numbers) nums[k] = number_json(v);
      for (const auto& [k, v] : r.strings) strs[k] = v;
      for (const auto& [k, t] : r.tensors) {
        const std::string file = index4(i) + "_" + safe_key(k) + ".npy";
        write_npy(tmp / file, "<f4", t.shape(), t.data(), size_t(t.numel()));
        tens[k] = {{"shape", t.shape()}, {"dtype", "<f4"}, {"file", file}};
        ++files;
        floats += t.numel();
      }
      nd["numbers"] = nums;
      nd["strings"] = strs;
      nd["tensors"] = tens;
      nodes.push_back(nd);
    }
    m["nodes"] = nodes;
    summary = {{"tool", "export_npy"}, {"model", model_path}, {"outdir", outdir.string()},
               {"nodes", net.size()}, {"tensor_files", files}, {"tensor_floats", floats}};

    if (!data_spec.empty()) {
      const Tensor& x = data.images;
      std::vector<int64_t> labels(data.labels.begin(), data.labels.end());
      nlohmann::json d;
      d["source"] = data_spec;
      d["num_classes"] = data.num_classes;
      if (as_uint8) {
        std::vector<uint8_t> bytes(size_t(x.numel()));
        for (int64_t i = 0; i < x.numel(); ++i) {
          const float v = x[i];
          const float k = std::nearbyint(v * 255.0f);
          if (!(k >= 0.0f && k <= 255.0f) || static_cast<float>(static_cast<uint8_t>(k)) / 255.0f != v)
            throw std::runtime_error("--uint8: pixel " + std::to_string(i) + " = " + std::to_string(v) +
                                     " is not k/255 for an integer k in 0..255; export as float32 instead");
          bytes[size_t(i)] = static_cast<uint8_t>(k);
        }
        write_npy(tmp / "images.npy", "|u1", x.shape(), bytes.data(), bytes.size());
        d["images"] = {{"file", "images.npy"}, {"shape", x.shape()}, {"dtype", "|u1"},
                       {"meaning", "pixel = float32(k) / 255"}};
      } else {
        write_npy(tmp / "images.npy", "<f4", x.shape(), x.data(), size_t(x.numel()));
        d["images"] = {{"file", "images.npy"}, {"shape", x.shape()}, {"dtype", "<f4"}};
      }
      write_npy(tmp / "labels.npy", "<i8", {int64_t(labels.size())}, labels.data(), labels.size());
      d["labels"] = {{"file", "labels.npy"}, {"shape", nlohmann::json::array({labels.size()})}, {"dtype", "<i8"}};
      if (data_h5) {
        bench::write_dataset_h5((tmp / "data.h5").string(), x, labels, data_spec);
        d["h5"] = "data.h5";
      }
      m["data"] = d;
      summary["data"] = {{"source", data_spec}, {"images", data.size()}, {"shape", x.shape()},
                         {"dtype", as_uint8 ? "uint8" : "float32"}, {"h5", data_h5}};
    }

    {
      std::ofstream f(tmp / "manifest.json", std::ios::trunc);
      f << m.dump(1) << "\n";
      f.close();
      if (!f) throw std::runtime_error("cannot write " + (tmp / "manifest.json").string());
    }
    // Swap in: an earlier export is moved aside first and removed only after the rename succeeded.
    if (fs::exists(outdir)) {
      const fs::path old = parent / (outdir.filename().string() + ".old-" + std::to_string(::getpid()));
      fs::remove_all(old, ec);
      fs::rename(outdir, old);
      try {
        fs::rename(tmp, outdir);
      } catch (...) {
        fs::rename(old, outdir, ec);
        throw;
      }
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, outdir);
    }
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  std::printf("%s\n", summary.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "export_npy: error: %s\n", e.what());
  return 1;
}
