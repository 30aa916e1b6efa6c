#include "snn/cpu/activation_slots.hpp"

#include <algorithm>
#include <map>

#include "snn/error.hpp"

namespace snn::cpu {

ActivationSlots plan_activation_slots(const std::vector<int>& written_at, const std::vector<int>& read_until,
                                      const std::vector<int64_t>& size) {
  const size_t n = written_at.size();
  require(read_until.size() == n && size.size() == n, "plan_activation_slots: per-node lists of unequal length");
  ActivationSlots plan;
  plan.slot.assign(n, -1);
  int positions = 0;
  for (size_t j = 0; j < n; ++j) {
    if (written_at[j] < 0) continue;
    require(read_until[j] >= written_at[j], "plan_activation_slots: a node is read before it is written");
    positions = std::max(positions, written_at[j] + 1);
  }
  std::map<int64_t, std::vector<int>> free_by_size;  // free buffers, the most recently freed last
  std::vector<std::vector<size_t>> written(static_cast<size_t>(positions)), released_at(written.size());
  for (size_t j = 0; j < n; ++j)
    if (written_at[j] >= 0) written[size_t(written_at[j])].push_back(j);
  for (int p = 0; p < positions; ++p) {
    // Outputs written at p take a free buffer of their size (the most recently used: warmest in cache).
    for (size_t j : written[size_t(p)]) {
      auto& free = free_by_size[size[j]];
      if (free.empty()) {
        plan.slot[j] = plan.count++;
      } else {
        plan.slot[j] = free.back();
        free.pop_back();
      }
      if (read_until[j] < positions) released_at[size_t(read_until[j])].push_back(j);
    }
    // Then the buffers whose last reader is p are free for later positions (not for p's own output,
    // which is written while p reads them).
    for (size_t j : released_at[size_t(p)]) free_by_size[size[j]].push_back(plan.slot[j]);
  }
  return plan;
}

}  // namespace snn::cpu
