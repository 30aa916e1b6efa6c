// A backend's table of kernels, keyed by layer type. Each kernel file registers its own entry at start-up
//   namespace { const bool registered = cpu::kernels().add("conv2d", make_conv2d_kernel); }
// so a new layer type touches its description plus one kernel file per backend. The libraries holding
// kernels are linked whole (see the top-level CMakeLists.txt), so no registration is dropped by the linker.
#pragma once
#include <map>
#include <mutex>
#include <string>

#include "snn/error.hpp"
#include "snn/layer.hpp"

namespace snn {

template <class Factory>
class KernelRegistry {
 public:
  explicit KernelRegistry(std::string backend) : backend_(std::move(backend)) {}

  bool add(const std::string& type, Factory factory) {
    std::lock_guard<std::mutex> lock(mutex_);
    table_[type] = std::move(factory);
    return true;
  }

  // The factory for this layer's type; throws naming the layer, its type and the backend.
  Factory find(const Layer& layer) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = table_.find(layer.type());
    if (it == table_.end()) {
      std::string known;
      for (const auto& kv : table_) known += (known.empty() ? "" : ", ") + kv.first;
      throw Error("layer '" + layer.name() + "' (" + layer.type() + "): the " + backend_ +
                  " backend has no kernel for this layer type (it has: " + known + ")");
    }
    return it->second;
  }

  bool has(const std::string& type) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return table_.count(type) != 0;
  }

 private:
  std::string backend_;
  mutable std::mutex mutex_;
  std::map<std::string, Factory> table_;
};

}  // namespace snn
