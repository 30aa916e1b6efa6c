// Memory checks before big allocations: sizes come from files and options (a declared image size, --T,
// --batch-size), so allocating first and failing with std::bad_alloc (or being OOM-killed) is replaced
// by an up-front refusal that gives the estimate and says which option to change.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace snn {

class Network;

// Bytes this process can still allocate: MemAvailable, capped by a cgroup (container) memory limit.
int64_t available_memory_bytes();

// "1.5 GiB", "320 MiB", "12 KiB".
std::string format_bytes(double bytes);

// Throws an Error when `bytes` (the estimate for `what`) exceeds the available memory:
// "<what> needs about 4.0 TiB, more than the 21.3 GiB available; <hint>".
void require_memory(double bytes, const std::string& what, const std::string& hint);

// An upper estimate of the host memory a simulation of `net` takes on batches of `batch` images for
// `timesteps` steps: parameters, per-node outputs and neuron states (a few copies each, for the fused
// chunks of steps), and the per-step records (predictions, spikes, operation counts).
double simulation_memory_bytes(const Network& net, int64_t batch, int64_t timesteps);

// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with transparent huge pages
// (Linux madvise(MADV_HUGEPAGE); nothing elsewhere, or where the system has them off). Call it on memory
// not yet touched: it is first touched a huge page at a time instead of in 4 KiB faults. Buffers of
// ResNet-18's simulation take ~540 MB at the first batch: in 4 KiB pages, ~140 000 page faults, half a
// second on the VM of bench/README.md. Returns whether any range was advised.
bool advise_huge_pages(void* p, std::size_t bytes);

// Below this, a buffer is not worth advising (it holds no whole huge page, or few).
constexpr std::size_t kHugePageAdviceBytes = std::size_t(4) << 20;

}  // namespace snn
