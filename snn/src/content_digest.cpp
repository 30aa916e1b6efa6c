#include "snn/content_digest.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "snn/error.hpp"
#include "snn/sha256.hpp"

namespace snn {

namespace {
void add_file(Sha256& hash, const std::string& path) {
  const auto fail = [&](const char* what) {
    throw Error("cannot " + std::string(what) + " '" + path + "' to digest its contents: " + std::strerror(errno));
  };
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) fail("open");
  std::vector<char> buf(size_t(1) << 20);
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), file.get())) > 0) hash.update(buf.data(), n);
  if (std::ferror(file.get())) fail("read");
}
}  // namespace

std::string file_content_digest(const std::string& path) {
  Sha256 hash;
  add_file(hash, path);
  return "sha256:" + hash.hex_digest();
}

std::string files_content_digest(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return file_content_digest(paths[0]);
  Sha256 hash;
  for (const auto& p : paths) hash.update(file_content_digest(p));  // file boundaries count
  return "sha256:" + hash.hex_digest();
}

}  // namespace snn
