// What a file holds, as a digest: SHA-256 of all its bytes. Job keys (sweep checkpoints, the MPI rank
// check) use it so that a file changed under the same name, or different files under one name on
// different nodes, is noticed; a name or a size and a few sampled bytes would not notice.
#pragma once
#include <string>
#include <vector>

namespace snn {

// "sha256:<64 hex digits>" of the file's contents; an unreadable file is an Error naming it.
std::string file_content_digest(const std::string& path);
// One digest over several files' contents, in order (e.g. an IDX images and labels pair).
std::string files_content_digest(const std::vector<std::string>& paths);

}  // namespace snn
