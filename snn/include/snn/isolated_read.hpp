// Untrusted files are parsed in a child process. libhdf5 1.10 can still crash, or write out of bounds, on
// a crafted file (use-after-free and null dereferences inside it, found by fuzzing and outside testing);
// no check snnc makes before calling it can rule that out. So the child opens, parses and validates the
// file, and hands its parent the validated values as bytes (byte_codec.hpp): a hostile file can kill the
// child, never snnc, and never touches the parent's memory. Costs one fork and one copy of the values
// through a pipe (bench/isolated_read.py measures it).
#pragma once
#include <functional>
#include <string>

namespace snn {

// Runs read() in a child process and returns the bytes it returned. An snn::Error the child throws is
// rethrown here with its message; a child that dies (a crash inside libhdf5, a sanitizer report) is an
// Error "NAME: reading it crashed ..." (`name`: the file as errors name it) with the signal. With
// isolation off, read() runs in this process.
std::string read_isolated(const std::string& name, const std::function<std::string()>& read);

// On by default. Fuzz targets turn it off: they must see the parser's coverage and crashes in-process.
void set_read_isolation(bool on);
bool read_isolation();

}  // namespace snn
