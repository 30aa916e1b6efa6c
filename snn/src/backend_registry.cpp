// make_backend: picks the backend by name; the one-call conveniences of Backend. The CUDA backend (in snn_cuda) registers itself at start-up
// of programs that link it; the core knows only the CPU one.
#include <cstdio>
#include <map>
#include <mutex>

#include "snn/backend_registry.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/error.hpp"
#include "snn/limits.hpp"

namespace snn {

namespace {
struct Entry {
  BackendFactory factory;
  BackendAvailable available;
};
std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}
std::mutex registry_mutex;
}  // namespace

bool register_backend(const std::string& name, BackendFactory factory, BackendAvailable available) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[name] = {std::move(factory), std::move(available)};
  return true;
}

Tensor Backend::forward_ann(const Network& net, const Tensor& images, std::vector<Tensor>* node_outputs) {
  auto program = prepare(net);
  return forward_ann(*program, images, node_outputs);
}

BatchSimulation Backend::simulate(const Network& net, const Tensor& images, const SimulationOptions& opts) {
  auto program = prepare(net);
  return simulate(*program, images, opts);
}

std::unique_ptr<Backend> make_backend(const std::string& device, int threads, bool quiet, int gpu) {
  check_range(int64_t(threads), limits::threads(), "threads");
  if (device == "cpu") return std::make_unique<CpuBackend>(threads);
  if (device != "cuda" && device != "auto")
    throw Error("unknown device '" + device + "' (expected cpu, cuda or auto)");
  Entry cuda;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto it = registry().find("cuda");
    if (it != registry().end()) cuda = it->second;
  }
  std::string why;
  if (!cuda.factory) why = "no CUDA backend in this build";
  else if (cuda.available && !cuda.available(&why)) why = "no usable GPU: " + why;
  if (why.empty()) {
    auto backend = cuda.factory(threads, gpu);
    if (device == "auto" && !quiet) std::fprintf(stderr, "snnc: using %s\n", backend->description().c_str());
    return backend;
  }
  if (device == "cuda") throw Error("--device cuda: " + why);
  if (!quiet) std::fprintf(stderr, "snnc: using the CPU backend (%s)\n", why.c_str());
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace snn
