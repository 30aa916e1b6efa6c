// Outputs that never destroy an input and are never left half-written (snn/output_file.hpp).
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "snn/error.hpp"
#include "snn/output_file.hpp"
#include "test_util.hpp"

using namespace snn;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) {
  const std::string dir = snn_test::temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Everything in dir except the named files: leftovers such as hidden temp files.
std::vector<std::string> others(const std::string& dir, const std::vector<std::string>& expected) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) found.push_back(name);
  }
  return found;
}

}  // namespace

TEST_CASE("an output that is an input is refused, however it is spelt", "[output]") {
  const std::string dir = fresh_dir("out_alias");
  const std::string in = dir + "/model.snn.h5";
  std::ofstream(in) << "precious";
  REQUIRE_THROWS_WITH(check_output_path(in, {in}), Contains("refusing") && Contains("model.snn.h5"));
  REQUIRE_THROWS_WITH(check_output_path(dir + "/./model.snn.h5", {in}), Contains("refusing"));
  fs::create_symlink(in, dir + "/link.h5");
  REQUIRE_THROWS_WITH(check_output_path(dir + "/link.h5", {in}), Contains("refusing") && Contains("symbolic link"));
  fs::create_hard_link(in, dir + "/hard.h5");
  REQUIRE_THROWS_WITH(check_output_path(dir + "/hard.h5", {in}), Contains("refusing"));
  // Another existing file, and a new one, are fine; the input is untouched.
  std::ofstream(dir + "/old.h5") << "old";
  REQUIRE_NOTHROW(check_output_path(dir + "/old.h5", {in}));
  REQUIRE_NOTHROW(check_output_path(dir + "/new.h5", {in}));
  REQUIRE(read_all(in) == "precious");
}

TEST_CASE("an output path that cannot be written is refused before any work", "[output]") {
  const std::string dir = fresh_dir("out_paths");
  REQUIRE_THROWS_WITH(check_output_path(dir + "/missing/x.h5", {}),
                      Contains("missing") && Contains("No such file or directory"));
  REQUIRE_THROWS_WITH(check_output_path(dir, {}), Contains("is a directory"));
  std::ofstream(dir + "/file") << "x";
  REQUIRE_THROWS_WITH(check_output_path(dir + "/file/x.h5", {}), Contains("not a directory"));
  std::ofstream(dir + "/ro.h5") << "x";
  fs::permissions(dir + "/ro.h5", fs::perms::owner_read);
  REQUIRE_THROWS_WITH(check_output_path(dir + "/ro.h5", {}), Contains("read-only"));
  REQUIRE_THROWS_WITH(check_output_path("/dev/null", {}), Contains("not a regular file"));
  REQUIRE(others(dir, {"file", "ro.h5"}).empty());
}

TEST_CASE("atomic writes replace the target whole and leave nothing behind", "[output]") {
  const std::string dir = fresh_dir("out_atomic");
  const std::string target = dir + "/out.bin";
  std::ofstream(target) << "old contents";
  const std::string data(100000, 'x');
  write_file_atomically(target, data.data(), data.size());
  REQUIRE(read_all(target) == data);
  REQUIRE(others(dir, {"out.bin"}).empty());
  // A legal 250-byte name: the temp file's longer name must still fit the 255-byte limit.
  const std::string long_name = dir + "/" + std::string(246, 'L') + ".bin";
  write_file_atomically(long_name, data.data(), data.size());
  REQUIRE(read_all(long_name) == data);
  fs::remove(long_name);
  REQUIRE_THROWS_WITH(write_file_atomically(dir + "/nope/out.bin", data.data(), data.size()),
                      Contains("nope/out.bin") && Contains("No such file or directory"));
}

TEST_CASE("a write that hits a file-size limit fails cleanly and keeps the old file", "[output]") {
  const std::string dir = fresh_dir("out_limit");
  const std::string target = dir + "/out.bin";
  std::ofstream(target) << "old contents";
  // In a child: RLIMIT_FSIZE makes write() fail with EFBIG (the writer ignores SIGXFSZ meanwhile).
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    struct rlimit lim = {8192, 8192};
    setrlimit(RLIMIT_FSIZE, &lim);
    const std::string data(1 << 20, 'y');
    try {
      write_file_atomically(target, data.data(), data.size());
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("File too large") != std::string::npos ? 42 : 43);
    }
    _exit(44);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 42);
  REQUIRE(read_all(target) == "old contents");
  REQUIRE(others(dir, {"out.bin"}).empty());
}
