// The CPU backend's activation buffer plan (snn/cpu/activation_slots.hpp): outputs needed at the same
// time never share a buffer, shared buffers hold outputs of one size, and buffers are reused.
#include <catch2/catch.hpp>
#include <random>

#include "snn/cpu/activation_slots.hpp"
#include "snn/error.hpp"

using namespace snn;

namespace {
// Every pair of nodes sharing a buffer: equal sizes and disjoint live ranges [written_at, read_until].
void check_plan(const cpu::ActivationSlots& plan, const std::vector<int>& written, const std::vector<int>& until,
                const std::vector<int64_t>& size) {
  for (size_t a = 0; a < written.size(); ++a) {
    CHECK((plan.slot[a] >= 0) == (written[a] >= 0));
    CHECK(plan.slot[a] < plan.count);
    for (size_t b = a + 1; b < written.size(); ++b) {
      if (plan.slot[a] < 0 || plan.slot[a] != plan.slot[b]) continue;
      CAPTURE(a, b, written[a], until[a], written[b], until[b]);
      CHECK(size[a] == size[b]);
      CHECK((until[a] < written[b] || until[b] < written[a]));
    }
  }
}
}  // namespace

TEST_CASE("a chain of layers reuses two buffers per size", "[slots]") {
  // 0 -> 1 -> 2 -> ... -> 7, each read only by the next; sizes 4,4,4,4 then 2,2,2,2; node 7 read at the end.
  std::vector<int> written, until;
  std::vector<int64_t> size;
  for (int j = 0; j < 8; ++j) {
    written.push_back(j);
    until.push_back(j == 7 ? 8 : j + 1);
    size.push_back(j < 4 ? 4 : 2);
  }
  const auto plan = cpu::plan_activation_slots(written, until, size);
  check_plan(plan, written, until, size);
  CHECK(plan.count == 4);  // two per size: a layer's input and its output
}

TEST_CASE("a residual block keeps its input until the add reads it", "[slots]") {
  // x(0) -> conv1(1) -> act1(2) -> conv2(3) -> act2 fused with the add (4, reads 3 and 0); node 5: no output
  // (fused away); node 6 written at 4 (a stage fused into 4).
  const std::vector<int> written = {0, 1, 2, 3, 4, -1, 4};
  const std::vector<int> until = {4, 2, 3, 4, 7, -1, 7};
  const std::vector<int64_t> size(7, 8);
  const auto plan = cpu::plan_activation_slots(written, until, size);
  check_plan(plan, written, until, size);
  CHECK(plan.slot[5] == -1);
  CHECK(plan.slot[3] == plan.slot[1]);  // conv2 takes conv1's buffer, free once act1 has read it
  CHECK(plan.count == 4);               // x, conv1/conv2, act1/act2, and the stage's output
}

TEST_CASE("random live ranges never share a buffer while both are needed", "[slots]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + int(rng() % 40);
    std::vector<int> written(static_cast<size_t>(n)), until(written.size());
    std::vector<int64_t> size(written.size());
    for (int j = 0; j < n; ++j) {
      written[size_t(j)] = rng() % 5 == 0 ? -1 : int(rng() % size_t(n));
      until[size_t(j)] = written[size_t(j)] < 0 ? -1 : written[size_t(j)] + int(rng() % 6);
      size[size_t(j)] = 1 + int64_t(rng() % 3);
    }
    const auto plan = cpu::plan_activation_slots(written, until, size);
    check_plan(plan, written, until, size);
  }
  CHECK_THROWS_AS(cpu::plan_activation_slots({3}, {2}, {1}), Error);
}
