#include "snn/path_checks.hpp"

#include <climits>
#include <cstring>

#include "snn/error.hpp"

namespace snn {

namespace {
constexpr size_t kShownChars = 60;
// The file system's limit on one name. NAME_MAX is 255 on Linux's file systems; pathconf would need a
// directory that may not exist yet.
constexpr size_t kNameMax = NAME_MAX;
constexpr size_t kPathMax = PATH_MAX;
}  // namespace

std::string shortened_path(const std::string& path) {
  if (path.size() <= 2 * kShownChars) return path;
  return path.substr(0, kShownChars) + "..." + path.substr(path.size() - kShownChars / 2);
}

void check_path_length(const std::string& path, const std::string& what) {
  const std::string named = what + " '" + shortened_path(path) + "'";
  if (path.find('\0') != std::string::npos) throw Error(named + ": the path contains a NUL byte");
  if (path.size() >= kPathMax)
    throw Error(named + ": the path is too long (" + std::to_string(path.size()) + " bytes; the system's limit is " +
                std::to_string(kPathMax - 1) + ")");
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end - start > kNameMax)
      throw Error(named + ": a name in the path is too long (" + std::to_string(end - start) +
                  " bytes; the file system's limit is " + std::to_string(kNameMax) + ")");
    start = end + 1;
  }
}

}  // namespace snn
