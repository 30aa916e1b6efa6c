// snn::JobKey (snn/job_key.hpp) and file content digests (snn/content_digest.hpp): a key survives its
// text form whatever its values hold; two keys differing in one field name that field in one line; a
// file's digest follows its bytes, not its name.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "snn/content_digest.hpp"
#include "snn/error.hpp"
#include "snn/job_key.hpp"
#include "test_util.hpp"

using namespace snn;
using Catch::Contains;

namespace {
std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = snn_test::temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}
}  // namespace

TEST_CASE("a job key reads back from its text, whatever its values hold", "[job]") {
  JobKey key;
  key.add("model", "dir with\ttab/and\nnewline\\.snn.h5").add("--T", "16").add("--compare", "");
  const JobKey back = JobKey::decode(key.encode());
  REQUIRE(back.fields().size() == 3);
  CHECK(back.fields()[0].value == "dir with\ttab/and\nnewline\\.snn.h5");
  CHECK(back.fields()[2].value.empty());
  CHECK(back == key);
  for (const std::string bad : {"o\t--T\n", "x\t--T\t16\n", "o\t--T\t16", "o\t--T\t1\\q\n", "o\t--T\t16\textra\n"})
    CHECK_THROWS_AS(JobKey::decode(bad), Error);
}

TEST_CASE("two job keys: the first field that differs, in one line", "[job]") {
  JobKey a, b;
  a.add("--device", "cpu").add("--T", "16");
  b.add("--device", "cuda").add("--T", "16");
  auto d = first_difference(a, b);
  REQUIRE(d);
  CHECK(describe_change(*d) == "--device was cpu, now cuda");
  CHECK_FALSE(first_difference(a, a));

  JobKey c = a;
  c.add("--compare", "none,ftbc");
  d = first_difference(a, c);
  REQUIRE(d);
  CHECK(describe_change(*d) == "--compare was not given, now 'none,ftbc'");
  d = first_difference(c, a);
  REQUIRE(d);
  CHECK(describe_change(*d) == "--compare was 'none,ftbc', now not given");
}

TEST_CASE("a file's digest follows its contents, and a changed file is named as changed", "[job]") {
  const std::string one = write_file("digest_one.bin", "images v1"), two = write_file("digest_two.bin", "images v1");
  CHECK(file_content_digest(one) == file_content_digest(two));  // the bytes, not the name
  CHECK(file_content_digest(one).rfind("sha256:", 0) == 0);
  JobKey before;
  before.add("--calib-data", one).add_contents("--calib-data '" + one + "'", {one});
  write_file("digest_one.bin", "images v2");
  JobKey after;
  after.add("--calib-data", one).add_contents("--calib-data '" + one + "'", {one});
  const auto d = first_difference(before, after);
  REQUIRE(d);
  CHECK(describe_change(*d) == "the contents of --calib-data '" + one + "' changed");
  // Several files: order and file boundaries count.
  CHECK(files_content_digest({one, two}) != files_content_digest({two, one}));
  CHECK_THROWS_WITH(file_content_digest(snn_test::temp_path("no_such_file")), Contains("no_such_file"));
}
