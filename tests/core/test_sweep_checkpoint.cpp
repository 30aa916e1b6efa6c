// --checkpoint files (snn/sweep_checkpoint.hpp): what is saved is read back exactly, for its own job only
// (another job's file names the field that differs); anything a resume would trust is checked first: the
// digest (one changed byte), every number (fuzz_sweep_checkpoint once found next_block = 2e69 converted
// to an integer, undefined behaviour), the format version, the kind of file. Each refusal names the file
// and the cause.
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "snn/error.hpp"
#include "snn/sweep_checkpoint.hpp"
#include "test_util.hpp"

using namespace snn;
using Catch::Contains;

namespace {

JobKey job(const std::string& T = "16", const std::string& device = "cpu") {
  JobKey k;
  k.add("--T", T).add("--device", device);
  return k;
}

std::string saved_checkpoint(const std::string& name, const SweepPartial& p = {3, 7, 1.5, {2, 1e-300, 30.0}}) {
  const std::string path = snn_test::temp_path(name);
  std::filesystem::remove(path);
  SweepCheckpoint ck(path, job(), single_process());
  ck.save("ftbc", p);
  return path;
}

void overwrite_attr(const std::string& path, const std::string& group, const std::string& attr, double value) {
  H5::H5File f(path, H5F_ACC_RDWR);
  H5::Group g = f.openGroup(group);
  g.removeAttr(attr);
  g.createAttribute(attr, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_DOUBLE, &value);
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("a checkpoint reads back what was saved, for its own job only", "[checkpoint]") {
  const std::string path = saved_checkpoint("ckpt_roundtrip.h5");
  SweepCheckpoint again(path, job(), single_process());
  const auto p = again.find("ftbc");
  REQUIRE(p);
  CHECK(p->next_block == 3);
  CHECK(p->blocks == 7);
  CHECK(p->seconds == 1.5);
  CHECK(p->sums == std::vector<double>{2, 1e-300, 30.0});
  CHECK_FALSE(again.find("rts"));
  CHECK_THROWS_WITH(SweepCheckpoint(path, job("16", "cuda"), single_process()),
                    Contains(path) && Contains("belongs to another job: --device was cpu, now cuda"));
  CHECK_THROWS_WITH(SweepCheckpoint(path, job("12"), single_process()), Contains("--T was 16, now 12"));
}

TEST_CASE("a checkpoint with one changed byte is refused as damaged, and left as it was", "[checkpoint]") {
  const std::string path = saved_checkpoint("ckpt_flipped.h5", {3, 7, 1.5, {2, 5, 30.0}});
  {  // 30.0 -> 31.0: a plausible number, caught only by the digest
    H5::H5File f(path, H5F_ACC_RDWR);
    H5::DataSet ds = f.openGroup("parts/ftbc").openDataSet("sums");
    const double v[3] = {2, 5, 31.0};
    ds.write(v, H5::PredType::NATIVE_DOUBLE);
  }
  const std::string before = bytes_of(path);
  CHECK_THROWS_WITH(SweepCheckpoint(path, job(), single_process()),
                    Contains(path) && Contains("damaged") && Contains("digest") && Contains("--checkpoint"));
  CHECK(bytes_of(path) == before);
}

TEST_CASE("a checkpoint whose numbers cannot be counts is refused, naming the number", "[checkpoint]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [attr, value] : std::vector<std::pair<std::string, double>>{
           {"next_block", 2.04896e+69}, {"blocks", -1e300}, {"blocks", nan}, {"next_block", 2.5},
           {"blocks", -1.0}, {"next_block", INFINITY}, {"seconds", nan}, {"seconds", -1.0}}) {
    const std::string path = saved_checkpoint("ckpt_damaged.h5");
    overwrite_attr(path, "parts/ftbc", attr, value);
    INFO(attr << " = " << value);
    CHECK_THROWS_WITH(SweepCheckpoint(path, job(), single_process()), Contains(path) && Contains(attr));
  }
  // Saved that way (so the digest matches): still refused, by the value checks.
  CHECK_THROWS_WITH(SweepCheckpoint(saved_checkpoint("ckpt_damaged.h5", {8, 7, 1, {1}}), job(), single_process()),
                    Contains("next_block 8 of 7 blocks"));
  for (double bad : {nan, -1.0, double(INFINITY)})
    CHECK_THROWS_WITH(
        SweepCheckpoint(saved_checkpoint("ckpt_damaged.h5", {3, 7, 1, {1, bad}}), job(), single_process()),
        Contains("sums[1]"));
  CHECK_THROWS_WITH(SweepCheckpoint(saved_checkpoint("ckpt_damaged.h5", {0, 7, 0, {0, 4}}), job(), single_process()),
                    Contains("next_block is 0"));
}

TEST_CASE("a saved part must fit the sweep that resumes it", "[checkpoint]") {
  // 2 steps, 25 images in blocks of 10: after 1 block at most 10 correct predictions per step.
  const SweepLayout layout{3, 4, 2, 25, 10};
  const std::string ok = saved_checkpoint("ckpt_layout.h5", {1, 3, 1, {10, 7, 500, 3}});
  CHECK(SweepCheckpoint(ok, job(), single_process()).find("ftbc", layout));
  const std::string path = saved_checkpoint("ckpt_layout.h5", {1, 3, 1, {11, 7, 500, 3}});
  CHECK_THROWS_WITH(SweepCheckpoint(path, job(), single_process()).find("ftbc", layout),
                    Contains(path) && Contains("11 correct predictions at step 1 of 10 images"));
  CHECK_THROWS_WITH(SweepCheckpoint(path, job(), single_process()).find("ftbc", SweepLayout{4, 4, 2, 40, 10}),
                    Contains("3 blocks of 4 numbers, this run has 4 of 4"));
}

TEST_CASE("a file that is not a checkpoint of this format says what it is", "[checkpoint]") {
  const std::string path = saved_checkpoint("ckpt_version.h5");
  for (double version : {3.0, 3.5, 1.0}) {
    overwrite_attr(path, "/", "format_version", version);
    INFO("format_version " << version);
    CHECK_THROWS_WITH(SweepCheckpoint(path, job(), single_process()), Contains(path) && Contains("format_version"));
  }
  const std::string other = snn_test::temp_path("ckpt_other.h5");
  H5::H5File(other, H5F_ACC_TRUNC).createGroup("images");
  CHECK_THROWS_WITH(SweepCheckpoint(other, job(), single_process()),
                    Contains(other) && Contains("HDF5 file but not an snnc sweep checkpoint"));
  const std::string text = snn_test::temp_path("ckpt_text.h5");
  std::ofstream(text) << "not a checkpoint at all";
  try {
    SweepCheckpoint(text, job(), single_process());
    FAIL("a text file was read as a checkpoint");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Contains(text) && Contains("cannot be opened as an HDF5 file ("));
    CHECK(what.find("()") == std::string::npos);  // a reason, never an empty one
  }
  CHECK_THROWS_WITH(SweepCheckpoint("", job(), single_process()), Contains("--checkpoint") && Contains("empty"));
}

TEST_CASE("checkpoints written by tests/sweep_checkpoint_file.py (the fuzz seeds) are read as valid", "[checkpoint]") {
  // The Python digest must be snnc's, or the seeds and reliability cases that recompute it test nothing.
  JobKey fuzz_job;
  fuzz_job.add("job", "fuzz-job");
  const std::string dir = std::string(SNN_TEST_DIR) + "/fuzz/corpus/fuzz_sweep_checkpoint/";
  SweepCheckpoint two(dir + "two_parts.h5", fuzz_job, single_process());
  REQUIRE(two.find("ftbc", SweepLayout{4, 6, 2, 40, 10}));
  CHECK(two.find("ftbc")->sums == std::vector<double>{17, 20, 210, 1, 0.5, 4});
  CHECK(two.find("model")->next_block == 4);
  CHECK(SweepCheckpoint(dir + "one_part.h5", fuzz_job, single_process()).find("model"));
}
