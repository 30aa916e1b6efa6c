// An output never silently replaces a file of another kind (snn/file_kind.hpp), and over-long paths are
// "too long" (snn/path_checks.hpp).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "snn/error.hpp"
#include "snn/file_kind.hpp"
#include "snn/model_file.hpp"
#include "snn/path_checks.hpp"
#include "test_util.hpp"

using namespace snn;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
std::string file_with(const std::string& name, const std::string& bytes) {
  const std::string path = snn_test::temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}
}  // namespace

TEST_CASE("file kinds are told by content, not by name", "[file_kind]") {
  std::mt19937 rng(36);
  const std::string model = snn_test::temp_path("kind.txt");  // a model under a misleading name
  save_network(snn_test::small_cnn(rng), model);
  CHECK(detect_file_kind(model) == FileKind::SnncModel);
  CHECK(detect_file_kind(file_with("kind.snn.h5", std::string("PK\x03\x04", 4) + "rest")) == FileKind::Zip);
  CHECK(detect_file_kind(file_with("kind-pickle.pt", "\x80\x02}q")) == FileKind::Pickle);
  CHECK(detect_file_kind(file_with("kind-idx", std::string("\0\0\x08\x03", 4) + "1234")) == FileKind::Idx);
  CHECK(detect_file_kind(file_with("kind.nir", "plain text\n")) == FileKind::Other);
  CHECK(detect_file_kind(file_with("kind-empty", "")) == FileKind::Empty);
  CHECK(detect_file_kind(snn_test::temp_path("kind-none")) == FileKind::Missing);
}

TEST_CASE("an existing file of another kind is refused unless overwrite, the same kind is replaced",
          "[file_kind]") {
  std::mt19937 rng(37);
  const std::string pt = file_with("victim.pt", std::string("PK\x03\x04", 4) + "a TorchScript model");
  REQUIRE_THROWS_WITH(check_replaceable(pt, FileKind::NirGraph, false, "-o"),
                      Contains("refusing to replace -o") && Contains("victim.pt") && Contains("ZIP") &&
                          Contains("--overwrite"));
  REQUIRE_NOTHROW(check_replaceable(pt, FileKind::NirGraph, true, "-o"));
  const std::string model = snn_test::temp_path("same-kind.snn.h5");
  save_network(snn_test::small_cnn(rng), model);
  REQUIRE_NOTHROW(check_replaceable(model, FileKind::SnncModel, false, "-o"));
  REQUIRE_THROWS_WITH(check_replaceable(model, FileKind::SweepResults, false, "-o"), Contains("snnc model"));
  REQUIRE_NOTHROW(check_replaceable(file_with("empty.nir", ""), FileKind::NirGraph, false, "-o"));
  REQUIRE_NOTHROW(check_replaceable(snn_test::temp_path("absent.nir"), FileKind::NirGraph, false, "-o"));
}

TEST_CASE("paths beyond PATH_MAX or NAME_MAX are too long, not missing", "[file_kind][paths]") {
  REQUIRE_THROWS_WITH(check_path_length(std::string(300, 'n') + ".snn.h5", "model file"),
                      Contains("model file") && Contains("too long") && Contains("255"));
  std::string deep;
  for (int i = 0; i < 30; ++i) deep += std::string(200, 'd') + "/";
  REQUIRE_THROWS_WITH(check_path_length(deep + "m.snn.h5", "-o"), Contains("-o") && Contains("path is too long"));
  REQUIRE_THROWS_WITH(load_network(deep + "m.snn.h5"), Contains("too long") && !Contains("not found"));
  REQUIRE_NOTHROW(check_path_length("a/b/" + std::string(255, 'c'), "model file"));
  REQUIRE(shortened_path(deep).size() < 200);
}
