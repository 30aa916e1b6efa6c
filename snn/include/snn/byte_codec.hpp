// A flat byte encoding of plain values: what a child process that read an untrusted file hands back to its
// parent (isolated_read.hpp). Numbers are in this machine's byte order (parent and child are one binary).
// Reading checks every length against the bytes left: a short or garbled message is an Error, never an
// overrun.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "snn/tensor.hpp"

namespace snn {

class ByteWriter {
 public:
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s);
  void floats(const std::vector<float>& v);
  void ints(const std::vector<int64_t>& v);
  void tensor(const Tensor& t);
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : in_(bytes) {}
  uint64_t u64();
  int64_t i64();
  double f64();
  std::string str();
  std::vector<float> floats();
  std::vector<int64_t> ints();
  Tensor tensor();
  // A count about to size an allocation of `element` bytes each: no more than the bytes left can hold.
  size_t count(size_t element);
  bool done() const { return at_ == in_.size(); }

 private:
  void raw(void* p, size_t n);
  std::string_view in_;
  size_t at_ = 0;
};

}  // namespace snn
