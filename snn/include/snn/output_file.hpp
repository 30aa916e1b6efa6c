// Output files that can never destroy an input and are never left half-written.
//
// - check_output_path refuses, before any long work, an output that is (or links to) an input, a
//   directory, a read-only file, or a path whose directory is missing or not writable (the reason in the
//   operating system's words).
// - write_file_atomically writes the bytes to an anonymous file in the target's directory (O_TMPFILE:
//   nothing to leave behind even on SIGKILL; a hidden temp file where the file system lacks it), checks
//   every write, fsyncs, and renames it over the target. The target is either the old file or the new
//   one, never a mixture. SIGINT/SIGTERM/SIGHUP during the write remove the temp file before the process
//   dies; a full disk or a file-size limit (SIGXFSZ is ignored meanwhile) is an error with errno's text.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace snn {

// `option` is how the output was given (e.g. "-o"), for messages; inputs are the files the command reads
// (paths that do not exist are ignored).
void check_output_path(const std::string& output, const std::vector<std::string>& inputs,
                       const std::string& option = "-o");

void write_file_atomically(const std::string& path, const void* data, size_t size);

}  // namespace snn
