#include "snn/layer.hpp"

#include <cmath>
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

int64_t LayerRecord::count(const std::string& key) const {
  const double v = number(key);
  require(std::isfinite(v) && v >= 0 && v < 2147483648.0 && v == std::floor(v),
          where(*this) + ": attribute '" + key + "' must be a whole number in [0, 2^31), got " + std::to_string(v));
  return int64_t(v);
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

void check_finite(const LayerRecord& r) {
  for (const auto& [key, v] : r.numbers)
    require(std::isfinite(v), where(r) + ": attribute '" + key + "' is " + std::to_string(v) + " (not finite)");
  for (const auto& [key, t] : r.tensors) {
    const float* d = t.data();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(d[i]))
        throw Error(where(r) + ": tensor '" + key + "' holds a non-finite value (" + (std::isnan(d[i]) ? "NaN" : "Inf") +
                    ") at element " + std::to_string(i) + " of shape " + to_string(t.shape()));
  }
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
  check_finite(record);
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
