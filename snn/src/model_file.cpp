#include "snn/model_file.hpp"

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"

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

void write_layer(H5::Group& layers, int index, const std::vector<int>& inputs, const LayerRecord& r) {
  H5::Group g = layers.createGroup(node_group_name(index));
  h5::write_attr(g, "type", r.type);
  h5::write_attr(g, "name", r.name);
  h5::write_attr(g, "inputs", std::vector<int64_t>(inputs.begin(), inputs.end()));
  for (const auto& [k, v] : r.numbers) h5::write_attr(g, "n:" + k, v);
  for (const auto& [k, v] : r.strings) h5::write_attr(g, "s:" + k, v);
  for (const auto& [k, t] : r.tensors) h5::write_tensor(g, k, t);
}

}  // namespace

void save_network(const Network& net, const std::string& path) {
  net.validate();
  h5::write_atomically(path, [&](H5::H5File& file) {
    h5::write_attr(file, "format", std::string(kFormat));
    h5::write_attr(file, "format_version", int64_t(kModelFormatVersion));
    h5::write_attr(file, "snnc_version", std::string(snnc_version()));
    h5::write_attr(file, "input_shape", net.input_shape());
    h5::write_attr(file, "layer_count", int64_t(net.size()));
    H5::Group meta = file.createGroup("metadata");
    for (const auto& [k, v] : net.metadata()) h5::write_attr(meta, k, v);
    if (!net.preprocessing().identity()) {
      H5::Group pre = file.createGroup("preprocessing");
      const auto& p = net.preprocessing();
      h5::write_tensor(pre, "mean", Tensor({int64_t(p.mean.size())}, p.mean));
      h5::write_tensor(pre, "std", Tensor({int64_t(p.std.size())}, p.std));
    }
    H5::Group layers = file.createGroup("layers");
    for (int i = 0; i < net.size(); ++i) write_layer(layers, i, net.inputs(i), net.layer(i).to_record());
  });
}

Network load_network(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) throw Error("model file not found: " + path);
  H5::Exception::dontPrint();
  std::string where = path;
  try {
    if (!H5::H5File::isHdf5(path)) throw Error(path + ": not an HDF5 file (is it a .snn.h5 model?)");
    H5::H5File file(path, H5F_ACC_RDONLY);
    if (!h5::has_attr(file, "format") || h5::read_string_attr(file, "format") != kFormat)
      throw Error(path + ": not an snnc network file (missing format = \"" + kFormat + "\")");
    const int64_t version = int64_t(h5::read_double_attr(file, "format_version"));
    if (version < kOldestModelFormatVersion || version > kModelFormatVersion)
      throw Error(path + ": model format version " + std::to_string(version) + " is not supported (this snnc " +
                  snnc_version() + " reads versions " + std::to_string(kOldestModelFormatVersion) + " to " +
                  std::to_string(kModelFormatVersion) + ")");
    Network net(h5::read_int_array_attr(file, "input_shape"));
    const int64_t count = int64_t(h5::read_double_attr(file, "layer_count"));

    if (file.nameExists("metadata")) {
      H5::Group meta = file.openGroup("metadata");
      for (const auto& k : h5::attr_names(meta)) net.metadata()[k] = h5::read_string_attr(meta, k);
    }
    if (file.nameExists("preprocessing")) {
      H5::Group pre = file.openGroup("preprocessing");
      Preprocessing p;
      p.mean = h5::read_tensor(pre, "mean").values();
      p.std = h5::read_tensor(pre, "std").values();
      net.set_preprocessing(p);
    }
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
      for (const auto& a : h5::attr_names(g)) {
        if (a.rfind("n:", 0) == 0) r.numbers[a.substr(2)] = h5::read_double_attr(g, a);
        else if (a.rfind("s:", 0) == 0) r.strings[a.substr(2)] = h5::read_string_attr(g, a);
      }
      for (const auto& k : h5::child_names(g)) r.tensors[k] = h5::read_tensor(g, k);
      std::vector<int64_t> in = h5::read_int_array_attr(g, "inputs");
      net.add(layer_from_record(r), std::vector<int>(in.begin(), in.end()));
    }
    net.validate();
    return net;
  } catch (const H5::Exception& e) {
    throw Error(where + ": cannot read (corrupted or truncated HDF5?): " + e.getDetailMsg());
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(path, 0) == 0) throw;
    throw Error(where + ": " + msg);
  }
}

}  // namespace snn
