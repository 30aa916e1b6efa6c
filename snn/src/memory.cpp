#include "snn/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "snn/error.hpp"
#include "snn/network.hpp"
#include "snn/simulation_plan.hpp"

namespace snn {

namespace {

int64_t read_meminfo_available() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return std::numeric_limits<int64_t>::max();  // not Linux: no estimate, no refusal
}

// cgroup v2 (memory.max - memory.current) or v1 (limit - usage); max() where there is no limit.
int64_t cgroup_headroom() {
  auto read_number = [](const char* path, int64_t* out) {
    std::ifstream f(path);
    std::string s;
    if (!(f >> s) || s == "max") return false;
    try {
      *out = std::stoll(s);
    } catch (...) {
      return false;
    }
    return true;
  };
  int64_t limit = 0, used = 0;
  if (read_number("/sys/fs/cgroup/memory.max", &limit) && read_number("/sys/fs/cgroup/memory.current", &used))
    return std::max<int64_t>(0, limit - used);
  if (read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", &limit) && limit < (int64_t{1} << 60) &&
      read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes", &used))
    return std::max<int64_t>(0, limit - used);
  return std::numeric_limits<int64_t>::max();
}

}  // namespace

int64_t available_memory_bytes() { return std::min(read_meminfo_available(), cgroup_headroom()); }

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) bytes /= 1024.0, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void require_memory(double bytes, const std::string& what, const std::string& hint) {
  const int64_t available = available_memory_bytes();
  if (bytes <= double(available)) return;
  throw Error(what + " needs about " + format_bytes(bytes) + ", more than the " + format_bytes(double(available)) +
              " of memory available" + (hint.empty() ? "" : "; " + hint));
}

double simulation_memory_bytes(const Network& net, int64_t batch, int64_t timesteps) {
  // The engine's own plan says how many steps one chunk holds (within SimulationOptions::memory_budget);
  // dynamic outputs take that many steps each, static ones (and neuron states) one.
  SimulationOptions opts;
  opts.timesteps = timesteps;
  const SimulationPlan plan = make_simulation_plan(net, opts, batch);
  double dynamic_per_step = 0, static_floats = double(numel_of(net.input_shape()));
  for (int i = 0; i < net.size(); ++i) {
    const double n = double(numel_of(net.output_shape(i)));
    if (plan.is_static[size_t(i)]) static_floats += n;
    else dynamic_per_step += n;
  }
  const double b = double(batch), f = sizeof(float);
  // Dynamic outputs of a chunk, plus half as much again for kernel scratch (im2col, repeated static
  // inputs); static outputs and neuron states twice over (the ANN pass, the states).
  const double activations = 1.5 * double(plan.chunk_steps) * b * dynamic_per_step * f + 2.0 * b * static_floats * f +
                             2.0 * b * dynamic_per_step * f;
  const double records = double(timesteps) * (b * 8.0 + double(net.size()) * 3.0 * 8.0);
  return double(net.parameter_count()) * 2.0 * f + activations + records;
}

bool advise_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end <= begin) return false;
  // Advice only: a kernel without transparent huge pages refuses it, and the memory stays as it was.
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

}  // namespace snn
