// --checkpoint files (snn/sweep_checkpoint.hpp): what is saved is read back exactly, and a damaged
// block count is an error naming the file and the attribute (fuzz_sweep_checkpoint once found
// next_block = 2e69 converted to an integer, undefined behaviour).
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>

#include "snn/error.hpp"
#include "snn/sweep_checkpoint.hpp"
#include "test_util.hpp"

using namespace snn;
using Catch::Contains;

namespace {

std::string saved_checkpoint(const std::string& name) {
  const std::string path = snn_test::temp_path(name);
  std::filesystem::remove(path);
  SweepCheckpoint ck(path, "job-a", single_process());
  ck.save("ftbc", SweepPartial{3, 7, 1.5, {0.25, 1e-300, -2.0}});
  return path;
}

void overwrite_attr(const std::string& path, const std::string& attr, double value) {
  H5::H5File f(path, H5F_ACC_RDWR);
  H5::Group g = f.openGroup("parts/ftbc");
  g.removeAttr(attr);
  g.createAttribute(attr, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_DOUBLE, &value);
}

}  // namespace

TEST_CASE("a checkpoint reads back what was saved, for its own job only", "[checkpoint]") {
  const std::string path = saved_checkpoint("ckpt_roundtrip.h5");
  SweepCheckpoint again(path, "job-a", single_process());
  const auto p = again.find("ftbc");
  REQUIRE(p);
  CHECK(p->next_block == 3);
  CHECK(p->blocks == 7);
  CHECK(p->seconds == 1.5);
  CHECK(p->sums == std::vector<double>{0.25, 1e-300, -2.0});
  CHECK_FALSE(again.find("rts"));
  CHECK_THROWS_WITH(SweepCheckpoint(path, "job-b", single_process()),
                    Contains(path) && Contains("belongs to another job"));
}

TEST_CASE("a checkpoint whose block counts are not whole numbers in range is refused", "[checkpoint]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [attr, value] : std::vector<std::pair<std::string, double>>{
           {"next_block", 2.04896e+69}, {"blocks", -1e300}, {"blocks", nan}, {"next_block", 2.5},
           {"blocks", -1.0}, {"next_block", INFINITY}}) {
    const std::string path = saved_checkpoint("ckpt_damaged.h5");
    overwrite_attr(path, attr, value);
    INFO(attr << " = " << value);
    CHECK_THROWS_WITH(SweepCheckpoint(path, "job-a", single_process()), Contains(path) && Contains(attr));
  }
  // In range but inconsistent: also refused.
  const std::string path = saved_checkpoint("ckpt_damaged.h5");
  overwrite_attr(path, "next_block", 8.0);
  CHECK_THROWS_WITH(SweepCheckpoint(path, "job-a", single_process()), Contains("next_block 8 of 7 blocks"));
}
