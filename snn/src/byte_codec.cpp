#include "snn/byte_codec.hpp"

#include <cstring>

#include "snn/error.hpp"

namespace snn {

void ByteWriter::str(const std::string& s) {
  u64(s.size());
  raw(s.data(), s.size());
}

void ByteWriter::floats(const std::vector<float>& v) {
  u64(v.size());
  raw(v.data(), v.size() * sizeof(float));
}

void ByteWriter::ints(const std::vector<int64_t>& v) {
  u64(v.size());
  raw(v.data(), v.size() * sizeof(int64_t));
}

void ByteWriter::tensor(const Tensor& t) {
  ints(t.shape());
  u64(uint64_t(t.numel()));
  raw(t.data(), size_t(t.numel()) * sizeof(float));
}

void ByteReader::raw(void* p, size_t n) {
  if (n > in_.size() - at_) throw Error("a child reader's message is cut short (" + std::to_string(in_.size()) + " bytes)");
  if (n) std::memcpy(p, in_.data() + at_, n);
  at_ += n;
}

uint64_t ByteReader::u64() {
  uint64_t v;
  raw(&v, sizeof v);
  return v;
}

int64_t ByteReader::i64() {
  int64_t v;
  raw(&v, sizeof v);
  return v;
}

double ByteReader::f64() {
  double v;
  raw(&v, sizeof v);
  return v;
}

size_t ByteReader::count(size_t element) {
  const uint64_t n = u64();
  if (n > (in_.size() - at_) / element) throw Error("a child reader's message is garbled (a count of " + std::to_string(n) + ")");
  return size_t(n);
}

std::string ByteReader::str() {
  std::string s(count(1), '\0');
  raw(s.data(), s.size());
  return s;
}

std::vector<float> ByteReader::floats() {
  std::vector<float> v(count(sizeof(float)));
  raw(v.data(), v.size() * sizeof(float));
  return v;
}

std::vector<int64_t> ByteReader::ints() {
  std::vector<int64_t> v(count(sizeof(int64_t)));
  raw(v.data(), v.size() * sizeof(int64_t));
  return v;
}

Tensor ByteReader::tensor() {
  Shape shape = ints();
  std::vector<float> values = floats();
  Tensor t(shape, std::move(values));
  return t;
}

}  // namespace snn
