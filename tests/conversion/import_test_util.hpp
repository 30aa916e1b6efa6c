// Shared by the importer tests: the message of an import that must fail (the test fails if it does not).
#pragma once
#include <catch2/catch.hpp>
#include <string>

#include "snn/conversion/torch_import.hpp"
#include "snn/error.hpp"

namespace snn_test {

inline std::string import_error_message(const std::string& path, snn::Shape shape) {
  snn::conversion::ImportOptions opts;
  opts.input_shape = std::move(shape);
  try {
    snn::conversion::import_torchscript(path, opts);
  } catch (const snn::Error& e) {
    return e.what();
  }
  FAIL("importing " << path << " did not fail");
  return "";
}

}  // namespace snn_test
