// Paths the operating system cannot take at all: longer than PATH_MAX, or with a component longer than
// the file system's NAME_MAX. Such a path is reported as "too long" (naming the part), not as "not
// found", which is what a failed stat() or exists() otherwise turns into.
#pragma once
#include <string>

namespace snn {

// Throws snn::Error("<what> '<path>': ... too long ...") when the path or one of its components exceeds the
// system's limits; `what` says which file it is ("model file", "dataset file", "-o").
void check_path_length(const std::string& path, const std::string& what);

// The path for a message: a very long one is shortened to its start and end.
std::string shortened_path(const std::string& path);

}  // namespace snn
