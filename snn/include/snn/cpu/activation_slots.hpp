// Which buffer holds each node's output while the CPU backend runs one chunk of the SNN view. A node's
// output is needed from the position where it is written until the last position that reads it; after
// that its buffer serves a later node of the same size. Buffers of one size are reused as soon as they
// are free, so the chunk's live activations (a few per residual block) stay in the last-level cache
// instead of every layer writing a buffer of its own, cold in cache (ResNet-18 at 224×224: ~100 MB of
// per-node buffers per chunk of 8 samples, against ~25 MB live at any time).
#pragma once
#include <cstdint>
#include <vector>

namespace snn::cpu {

struct ActivationSlots {
  std::vector<int> slot;  // per node: its buffer, or -1 (no output of its own)
  int count = 0;          // buffers used
};

// Per node j: written_at[j], the position (node index) at which its output is written, or -1 when it
// has none (static, fused away); read_until[j], the last position that reads it (at least written_at[j];
// larger than every position for outputs read after the chunk); size[j], its size (buffers are only
// shared between nodes of equal size, so a reused buffer is never grown or shrunk). A node's buffer is
// never one of its inputs' (their reads end no earlier than its write).
ActivationSlots plan_activation_slots(const std::vector<int>& written_at, const std::vector<int>& read_until,
                                      const std::vector<int64_t>& size);

}  // namespace snn::cpu
