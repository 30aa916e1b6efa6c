// snn::Error: the one exception type of the library. Messages name the culprit (file, layer, option);
// only the CLI turns them into exit codes.
#pragma once
#include <stdexcept>
#include <string>

namespace snn {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Throws snn::Error(message) when cond is false. For user-facing checks, not internal asserts.
inline void require(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}

}  // namespace snn
