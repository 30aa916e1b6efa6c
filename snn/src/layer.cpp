#include "snn/layer.hpp"

#include <mutex>

#include "snn/error.hpp"

namespace snn {

namespace {
std::string where(const LayerRecord& r) { return "layer '" + r.name + "' (" + r.type + ")"; }
}  // namespace

const Tensor& LayerRecord::tensor(const std::string& key) const {
  auto it = tensors.find(key);
  require(it != tensors.end(), where(*this) + ": missing tensor '" + key + "'");
  return it->second;
}

double LayerRecord::number(const std::string& key) const {
  auto it = numbers.find(key);
  require(it != numbers.end(), where(*this) + ": missing attribute '" + key + "'");
  return it->second;
}

double LayerRecord::number_or(const std::string& key, double fallback) const {
  auto it = numbers.find(key);
  return it == numbers.end() ? fallback : it->second;
}

const std::string& LayerRecord::string(const std::string& key) const {
  auto it = strings.find(key);
  require(it != strings.end(), where(*this) + ": missing attribute '" + key + "'");
  return it->second;
}

std::string LayerRecord::string_or(const std::string& key, const std::string& fallback) const {
  auto it = strings.find(key);
  return it == strings.end() ? fallback : it->second;
}

void Layer::fail(const std::string& message) const {
  throw Error("layer '" + name_ + "' (" + type() + "): " + message);
}

namespace {
std::map<std::string, LayerFactory>& registry() {
  static std::map<std::string, LayerFactory> r;  // filled by each layer's own file at start-up
  return r;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

bool register_layer_type(const std::string& type, LayerFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[type] = std::move(factory);
  return true;
}

std::unique_ptr<Layer> layer_from_record(const LayerRecord& record) {
  LayerFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(record.type);
    require(it != registry().end(), where(record) + ": unknown layer type '" + record.type + "'");
    factory = it->second;
  }
  return factory(record);
}

}  // namespace snn
