// Size arithmetic that refuses instead of wrapping, and the up-front memory estimates (snn/memory.hpp).
#include <catch2/catch.hpp>

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
