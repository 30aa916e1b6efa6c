// Size arithmetic that refuses instead of wrapping, and the up-front memory estimates (snn/memory.hpp).
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "snn/checked_math.hpp"
#include "snn/error.hpp"
#include "snn/memory.hpp"
#include "test_util.hpp"

using namespace snn;
using Catch::Contains;

TEST_CASE("shape sizes beyond 2^40 elements or int64 are refused, not wrapped", "[limits]") {
  REQUIRE(numel_of({1024, 1024, 1024}) == int64_t{1} << 30);
  REQUIRE(numel_of({3, 0, int64_t{1} << 62}) == 0);  // empty, however large the other dimensions
  REQUIRE_THROWS_WITH(numel_of({int64_t{1} << 21, int64_t{1} << 20}), Contains("2^40"));
  // 2^32 * 2^32 wraps to 0 in int64 arithmetic: it must be refused, not taken as empty.
  REQUIRE_THROWS_WITH(numel_of({int64_t{1} << 32, int64_t{1} << 32}), Contains("2^40"));
  REQUIRE_THROWS_WITH(checked_mul(int64_t{1} << 40, int64_t{1} << 30, "MACs"), Contains("MACs") && Contains("overflow"));
  REQUIRE(checked_mul(3, 5, "x") == 15);
  REQUIRE_THROWS(Network({1, int64_t{1} << 30, int64_t{1} << 30}));
}

TEST_CASE("the simulation memory estimate grows with batch and T and is refused beyond what is free", "[limits]") {
  std::mt19937 rng(3);
  const Network net = snn_test::small_cnn(rng);
  const double small = simulation_memory_bytes(net, 8, 4);
  REQUIRE(small > 0);
  REQUIRE(simulation_memory_bytes(net, 64, 4) > small);
  REQUIRE(simulation_memory_bytes(net, 8, 4000) > small);
  // At least one step of every node's output for the batch (what the engine cannot do without).
  double per_image = 0;
  for (int i = 0; i < net.size(); ++i) per_image += double(numel_of(net.output_shape(i)));
  REQUIRE(simulation_memory_bytes(net, 8, 4) >= 8 * per_image * sizeof(float));

  REQUIRE(available_memory_bytes() > 0);
  REQUIRE_NOTHROW(require_memory(1024.0, "a little", "never shown"));
  REQUIRE_THROWS_WITH(require_memory(1e18, "simulating 7 steps", "lower --T or --batch-size"),
                      Contains("simulating 7 steps") && Contains("needs about") && Contains("--batch-size"));
  REQUIRE(format_bytes(1536.0) == "1.5 KiB");
}

TEST_CASE("huge-page advice covers only the whole 2 MiB pages inside a buffer, and large tensors keep working",
          "[limits]") {
  // The advice is madvise on the aligned interior of [p, p + bytes): no whole huge page, no advice.
  const uintptr_t huge = uintptr_t(2) << 20;
  std::vector<char> buffer(size_t(9) << 20);
  char* a = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(buffer.data()) + huge - 1) & ~(huge - 1));
  REQUIRE_FALSE(advise_huge_pages(a + 4096, huge - 8192));  // inside one page
  REQUIRE_FALSE(advise_huge_pages(a + 4096, huge));         // across a boundary, but no whole page
  REQUIRE_FALSE(advise_huge_pages(a, huge - 1));
  bool offered = false;  // does this kernel offer transparent huge pages at all?
#if defined(__linux__)
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  offered = !modes.empty() && modes.find("[never]") == std::string::npos;
#endif
  if (offered) {
    REQUIRE(advise_huge_pages(a, huge));                 // exactly one page
    REQUIRE(advise_huge_pages(a + 4096, 2 * huge));      // the page that starts at a + huge
    REQUIRE(advise_huge_pages(buffer.data(), buffer.size()));
  }
  // A tensor grown past the advice threshold is a plain, writable buffer of the new size; growing
  // again and shrinking keep the shape consistent.
  Tensor t({4});
  const int64_t n = int64_t(kHugePageAdviceBytes / sizeof(float)) + 5;
  t.resize({n});
  REQUIRE(t.numel() == n);
  t.data()[n - 1] = 3.0f;
  t.data()[0] = 1.0f;
  REQUIRE(t.data()[n - 1] + t.data()[0] == 4.0f);
  t.resize({2, n});
  REQUIRE(t.numel() == 2 * n);
  REQUIRE(t.shape() == Shape{2, n});
  t.fill(0.5f);
  REQUIRE(t.data()[2 * n - 1] == 0.5f);
  t.resize({3});
  REQUIRE(t.numel() == 3);
}
