#include "snn/model_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <sstream>

#include "snn/error.hpp"
#include "snn/hdf5_untrusted.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/model_fields.hpp"
#include "snn/path_checks.hpp"
#include "snn/isolated_read.hpp"

#ifndef SNNC_VERSION
#define SNNC_VERSION "0.0.0"
#endif

namespace snn {

const char* snnc_version() { return SNNC_VERSION; }

namespace {

constexpr const char* kFormat = "snnc-network";

std::string node_group_name(int i) {
  std::ostringstream os;
  os << std::setw(4) << std::setfill('0') << i;
  return os.str();
}

// A CRC-32 over a canonical encoding of what a file says: every layer's type, name, inputs, numbers,
// strings and tensors, and the file's own header. Stored on writing and checked on reading, so a bit
// flipped anywhere (not only in tensor data, which Fletcher-32 also guards) is an error.
class Digest {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const Bytef*>(p);
    while (n > 0) {
      const uInt k = uInt(std::min<size_t>(n, size_t{1} << 30));
      crc_ = ::crc32(crc_, b, k);
      b += k, n -= k;
    }
  }
  void text(const std::string& s) {
    integer(int64_t(s.size()));
    bytes(s.data(), s.size());
  }
  void integer(int64_t v) { bytes(&v, sizeof v); }
  void number(double v) { bytes(&v, sizeof v); }
  void tensor(const Tensor& t) {
    Shape shape = t.shape().empty() ? Shape{1} : t.shape();  // a scalar is stored as [1]
    integer(int64_t(shape.size()));
    for (int64_t d : shape) integer(d);
    bytes(t.data(), size_t(t.numel()) * sizeof(float));
  }
  int64_t value() const { return int64_t(crc_); }

 private:
  uLong crc_ = ::crc32(0L, Z_NULL, 0);
};

int64_t layer_digest(const LayerRecord& r, const std::vector<int64_t>& inputs) {
  Digest d;
  d.text(r.type);
  d.text(r.name);
  d.integer(int64_t(inputs.size()));
  for (int64_t i : inputs) d.integer(i);
  for (const auto& [k, v] : r.numbers) d.text(k), d.number(v);
  for (const auto& [k, v] : r.strings) d.text(k), d.text(v);
  for (const auto& [k, t] : r.tensors) d.text(k), d.tensor(t);
  return d.value();
}

int64_t header_digest(const Shape& input_shape, int64_t layer_count, const Preprocessing& p,
                      const std::map<std::string, std::string>& metadata) {
  Digest d;
  for (int64_t v : input_shape) d.integer(v);
  d.integer(layer_count);
  for (float m : p.mean) d.number(m);
  for (float s : p.std) d.number(s);
  for (const auto& [k, v] : metadata) d.text(k), d.text(v);
  return d.value();
}

std::string hex(int64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%08llx", (unsigned long long)v);
  return buf;
}

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void check_digest(const H5::H5Object& obj, int64_t computed, const std::string& what) {
  if (!h5::has_attr(obj, "crc32")) return;  // files from snnc before 0.1.0 carry none
  const double stored = h5::read_double_attr(obj, "crc32");
  if (stored != double(computed))
    // A damaged file may store any double (inf, NaN, 1e300): only a CRC-32's range is shown in hex.
    throw Error("CRC-32 check failed for " + what + " (stored " +
                (stored >= 0.0 && stored <= 4294967295.0 ? hex(int64_t(stored)) : format_double(stored)) + ", computed " + hex(computed) +
                "): the file is corrupted, or was edited outside snnc (if on purpose, delete its 'crc32' attribute)");
}

// Every group whose attribute names vary (a layer's n:/s: attributes, /metadata) lists them in
// kKeysAttr, so that reading opens attributes by name only. Enumerating attributes by index walks
// libhdf5 1.10's attribute table, which crashes (SEGV in H5A__close) on some damaged files: found by
// fuzz_model_file. Files written before the lists (they carry no crc32 either) are still enumerated.
constexpr const char* kKeysAttr = "snnc:keys";

void write_keys(H5::H5Object& obj, const std::vector<std::string>& keys) {
  std::string joined;
  for (const auto& k : keys) joined += (joined.empty() ? "" : "\n") + k;
  h5::write_attr(obj, kKeysAttr, joined);
}

std::vector<std::string> read_keys(const H5::H5Object& obj, bool required) {
  if (!h5::has_attr(obj, kKeysAttr)) {
    if (required) throw Error("missing attribute '" + std::string(kKeysAttr) + "' (damaged file)");
    return h5::attr_names(obj);
  }
  std::vector<std::string> keys;
  const std::string joined = h5::read_string_attr(obj, kKeysAttr);
  size_t start = 0;
  while (start < joined.size()) {
    const size_t end = std::min(joined.find('\n', start), joined.size());
    keys.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return keys;
}

void write_layer(H5::Group& layers, int index, const std::vector<int>& inputs, const LayerRecord& r) {
  check_finite(r);
  check_record_fields(r);  // never write a file load_network would refuse
  H5::Group g = layers.createGroup(node_group_name(index));
  const std::vector<int64_t> in(inputs.begin(), inputs.end());
  h5::write_attr(g, "crc32", layer_digest(r, in));
  h5::write_attr(g, "type", r.type);
  h5::write_attr(g, "name", r.name);
  h5::write_attr(g, "inputs", std::vector<int64_t>(inputs.begin(), inputs.end()));
  std::vector<std::string> keys;
  for (const auto& [k, v] : r.numbers) h5::write_attr(g, "n:" + k, v), keys.push_back("n:" + k);
  for (const auto& [k, v] : r.strings) h5::write_attr(g, "s:" + k, v), keys.push_back("s:" + k);
  write_keys(g, keys);
  for (const auto& [k, t] : r.tensors) h5::write_tensor(g, k, t);
}

}  // namespace

int required_format_version(const Network& net) {
  for (int i : net.neuron_nodes())
    if (net.neuron(i).config().spikes == Spikes::Signed) return 3;
  return 2;
}

namespace {
void write_network(H5::H5File& file, const Network& net) {
  h5::write_attr(file, "format", std::string(kFormat));
  h5::write_attr(file, "format_version", int64_t(required_format_version(net)));
  h5::write_attr(file, "snnc_version", std::string(snnc_version()));
  h5::write_attr(file, "input_shape", net.input_shape());
  h5::write_attr(file, "layer_count", int64_t(net.size()));
  h5::write_attr(file, "crc32", header_digest(net.input_shape(), net.size(), net.preprocessing(), net.metadata()));
  H5::Group meta = file.createGroup("metadata");
  std::vector<std::string> keys;
  for (const auto& [k, v] : net.metadata())
    if (k != kKeysAttr) h5::write_attr(meta, k, v), keys.push_back(k);
  write_keys(meta, keys);
  if (!net.preprocessing().identity()) {
    H5::Group pre = file.createGroup("preprocessing");
    const auto& p = net.preprocessing();
    h5::write_tensor(pre, "mean", Tensor({int64_t(p.mean.size())}, p.mean));
    h5::write_tensor(pre, "std", Tensor({int64_t(p.std.size())}, p.std));
  }
  H5::Group layers = file.createGroup("layers");
  for (int i = 0; i < net.size(); ++i) write_layer(layers, i, net.inputs(i), net.layer(i).to_record());
}
}  // namespace

void save_network(const Network& net, const std::string& path) {
  net.validate();
  h5::write_atomically(path, [&](H5::H5File& file) { write_network(file, net); });
}

namespace {
// A whole number this build knows: 3.5 is no version (int64_t(3.5) would read it as 3).
void check_format_version(const H5::H5File& file, const std::string& path) {
  const double v = h5::read_double_attr(file, "format_version");
  if (v >= kOldestModelFormatVersion && v <= kModelFormatVersion && v == std::floor(v)) return;
  throw Error(path + ": model format version " + format_double(v) + " (field 'format_version') is not supported " +
              "(this snnc " + snnc_version() + " reads versions " + std::to_string(kOldestModelFormatVersion) + " to " +
              std::to_string(kModelFormatVersion) + ", whole numbers only)");
}

// Reads and validates the network in the file open() opens; errors name `path`.
Network read_network(const std::string& path, const std::function<H5::H5File()>& open) {
  H5::Exception::dontPrint();
  std::string where = path;
  try {
    H5::H5File file = open();
    if (!h5::has_attr(file, "format") || h5::read_string_attr(file, "format") != kFormat)
      throw Error(path + ": not an snnc network file (missing format = \"" + kFormat + "\")");
    check_format_version(file, path);
    const Shape input_shape = h5::read_int_array_attr(file, "input_shape");
    for (int64_t d : input_shape)
      require(d > 0 && d <= int64_t{1} << 31, "input_shape " + to_string(input_shape) + " is not a valid image shape");
    numel_of(input_shape);  // refuses shapes beyond 2^40 elements
    Network net(input_shape);
    const double count_attr = h5::read_double_attr(file, "layer_count");
    require(count_attr >= 1 && count_attr <= 1e6 && count_attr == std::floor(count_attr),
            "layer_count " + std::to_string(count_attr) + " is not a plausible number of layers");
    const int64_t count = int64_t(count_attr);
    const bool listed = h5::has_attr(file, "crc32");  // digests and key lists came together

    if (file.nameExists("metadata")) {
      H5::Group meta = file.openGroup("metadata");
      for (const auto& k : read_keys(meta, listed))
        if (k != kKeysAttr) net.metadata()[k] = h5::read_string_attr(meta, k);
    }
    if (file.nameExists("preprocessing")) {
      H5::Group pre = file.openGroup("preprocessing");
      Preprocessing p;
      p.mean = h5::read_tensor(pre, "mean").values();
      p.std = h5::read_tensor(pre, "std").values();
      check_preprocessing_fields(p);
      net.set_preprocessing(p);
    }
    check_digest(file, header_digest(net.input_shape(), count, net.preprocessing(), net.metadata()),
                 "the file header (input shape, layer count, preprocessing, metadata)");
    H5::Group layers = file.openGroup("layers");
    if (int64_t(layers.getNumObjs()) != count)
      throw Error(path + ": file says " + std::to_string(count) + " layers but holds " +
                  std::to_string(layers.getNumObjs()) + " (truncated or edited file?)");
    for (int i = 0; i < int(count); ++i) {
      where = path + ", layer #" + std::to_string(i);
      H5::Group g = layers.openGroup(node_group_name(i));
      LayerRecord r;
      r.type = h5::read_string_attr(g, "type");
      r.name = h5::read_string_attr(g, "name");
      where = path + ", layer '" + r.name + "'";
      for (const auto& a : read_keys(g, listed)) {
        if (a.rfind("n:", 0) == 0) r.numbers[a.substr(2)] = h5::read_double_attr(g, a);
        else if (a.rfind("s:", 0) == 0) r.strings[a.substr(2)] = h5::read_string_attr(g, a);
      }
      for (const auto& k : h5::child_names(g)) r.tensors[k] = h5::read_tensor(g, k);
      std::vector<int64_t> in = h5::read_int_array_attr(g, "inputs");
      for (int64_t j : in)
        require(j >= Network::kInput && j < i, "input node " + std::to_string(j) + " does not precede the layer");
      check_digest(g, layer_digest(r, in), "the layer's contents");
      check_finite(r);
      check_record_fields(r);  // every number in its range, before a layer is built from it
      if (in.size() == 1) check_linear_input(r, numel_of(net.output_shape(int(in[0]))));
      net.add(layer_from_record(r), std::vector<int>(in.begin(), in.end()));
    }
    net.validate();
    return net;
  } catch (const H5::Exception& e) {
    const std::string stack = h5::error_stack_text();
    throw Error(where + ": cannot read (corrupted or truncated file?): " + (stack.empty() ? e.getDetailMsg() : stack));
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(path, 0) == 0) throw;
    if (msg.rfind("layer '", 0) == 0) throw Error(path + ": " + msg);  // names the layer already
    throw Error(where + ": " + msg);
  }
}

}  // namespace

Network load_network(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  check_path_length(path, "model file");  // "too long", not "not found"
  if (!fs::exists(path, ec)) throw Error("model file not found: " + path);
  if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, expected a model file (.snn.h5)");
  auto open_file = [&] {
    if (!H5::H5File::isHdf5(path)) throw Error(path + ": not an HDF5 file (is it a .snn.h5 model?)");
    return h5::open_untrusted(path);
  };
  if (!read_isolation()) return read_network(path, open_file);
  // The child parses the untrusted file and hands back the validated network as a file image of snnc's
  // own writing, which this process then reads (isolated_read.hpp).
  const std::string image = read_isolated(path, [&] {
    const Network net = read_network(path, open_file);
    return h5::file_image([&](H5::H5File& file) { write_network(file, net); });
  });
  return read_network(path, [&] { return h5::open_image(image, path); });
}

}  // namespace snn
