// Shared by the fuzz targets: the readers under test take file paths, so each input is written to files
// in a per-process temporary directory (libFuzzer's -jobs/-fork workers each get their own).
//
// The contract checked: a reader either returns or throws snn::Error. Any other exception escapes
// LLVMFuzzerTestOneInput, terminates the process, and libFuzzer reports it like a crash; so do ASan/UBSan
// reports, leaks, timeouts and allocations beyond -malloc_limit_mb.
#pragma once
#include <H5Cpp.h>
#include <H5Epublic.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "snn/error.hpp"
#include "snn/isolated_read.hpp"

namespace snn_fuzz {

inline const std::string& temp_dir() {
  // Never destroyed: the atexit handler that removes the directory runs after static destructors would.
  static const std::string* dir = [] {
    char tmpl[] = "/tmp/snn-fuzz-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    auto* d = new std::string(tmpl);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(temp_dir(), ec); });
    return d;
  }();
  return *dir;
}

// Writes bytes to temp_dir()/name and returns the path.
inline std::string write_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) std::abort();  // the fuzzer's own fault, not a finding in the reader
  return path;
}

// HDF5 prints its whole error stack for every malformed file: silence it (errors still reach the caller).
// The readers run in this process, not in the child process they use in snnc (isolated_read.hpp): the
// fuzzer must see their coverage, and their crashes are its findings.
inline void quiet_hdf5() {
  H5::Exception::dontPrint();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  snn::set_read_isolation(false);
}

// Runs f; snn::Error is an expected outcome, anything else propagates (and is a finding).
template <class F>
void expect_only_snn_errors(F&& f) {
  try {
    f();
  } catch (const snn::Error&) {
  }
}

}  // namespace snn_fuzz
