// check_torchscript_archive on the committed .pt files (all must pass), on damaged copies of a fixture
// (a flipped weight byte, a truncation, a damaged central directory: each must be caught with the file
// and entry named), and on small hand-written archives for what PyTorch's own files rarely contain
// (zip64 end records, deflate bombs, overlapping entries). No LibTorch needed.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "snn/conversion/torchscript_archive.hpp"
#include "snn/error.hpp"
#include "test_util.hpp"

using Catch::Contains;
using snn::conversion::check_torchscript_archive;

namespace {

using Bytes = std::string;
const std::string kFixtures = std::string(SNN_TEST_DIR) + "/fixtures/";

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
std::string write_temp(const std::string& name, const Bytes& bytes) {
  const std::string path = snn_test::temp_path(name);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}
std::string check_error(const std::string& path) {
  try {
    check_torchscript_archive(path);
  } catch (const snn::Error& e) {
    return e.what();
  }
  return "(no error)";
}

uint32_t get32(const Bytes& b, size_t at) {
  return uint32_t(uint8_t(b[at])) | uint32_t(uint8_t(b[at + 1])) << 8 | uint32_t(uint8_t(b[at + 2])) << 16 |
         uint32_t(uint8_t(b[at + 3])) << 24;
}
uint16_t get16(const Bytes& b, size_t at) { return static_cast<uint16_t>(uint8_t(b[at]) | uint8_t(b[at + 1]) << 8); }
void put16(Bytes& b, uint64_t v) { b += char(v & 0xff), b += char(v >> 8 & 0xff); }
void put32(Bytes& b, uint64_t v) { put16(b, v & 0xffff), put16(b, v >> 16 & 0xffff); }
void put64(Bytes& b, uint64_t v) { put32(b, v & 0xffffffff), put32(b, v >> 32); }
void set32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = char(v >> (8 * i) & 0xff);
}

// Where an entry's local header and data start, found by walking the central directory of a PyTorch file
// (no zip64, no comment: what the fixtures are).
struct Located {
  size_t central = 0, local = 0, data = 0, size = 0;
};
Located locate(const Bytes& b, const std::string& name) {
  const size_t end = b.size() - 22;
  REQUIRE(get32(b, end) == 0x06054b50);
  size_t p = get32(b, end + 16);
  for (unsigned i = 0; i < get16(b, end + 10); ++i) {
    const size_t n = get16(b, p + 28), x = get16(b, p + 30), c = get16(b, p + 32);
    if (b.compare(p + 46, n, name) == 0) {
      Located l;
      l.central = p;
      l.local = get32(b, p + 42);
      l.data = l.local + 30 + get16(b, l.local + 26) + get16(b, l.local + 28);
      l.size = get32(b, p + 20);
      return l;
    }
    p += 46 + n + x + c;
  }
  FAIL("no entry " << name);
  return {};
}

// A minimal ZIP writer: stored or raw-deflated entries; zip64 saturates every 32-bit field it can and
// writes the zip64 extra fields and end records.
struct ZipEntry {
  std::string name;
  Bytes data;
  bool deflate = false;
  uint64_t declared_size_delta = 0;  // declares data.size() - delta bytes (a deflate bomb, in miniature)
};
Bytes deflate_raw(const Bytes& data) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  Bytes out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
Bytes make_zip(const std::vector<ZipEntry>& entries, bool zip64) {
  Bytes file, central;
  for (const ZipEntry& e : entries) {
    const Bytes stored = e.deflate ? deflate_raw(e.data) : e.data;
    const uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size())));
    const uint64_t usize = e.data.size() - e.declared_size_delta, offset = file.size();
    const uint16_t method = e.deflate ? 8 : 0;
    // Local header, with a data descriptor flag so that its sizes may be zero (as torch.save writes).
    put32(file, 0x04034b50), put16(file, 20), put16(file, 8), put16(file, method), put32(file, 0), put32(file, 0);
    put32(file, 0), put32(file, 0), put16(file, e.name.size()), put16(file, 0);
    file += e.name + stored;
    Bytes extra;
    if (zip64) put16(extra, 1), put16(extra, 24), put64(extra, usize), put64(extra, stored.size()), put64(extra, offset);
    put32(central, 0x02014b50), put16(central, 45), put16(central, 45), put16(central, 8), put16(central, method);
    put32(central, 0), put32(central, crc), put32(central, zip64 ? 0xffffffff : stored.size());
    put32(central, zip64 ? 0xffffffff : usize), put16(central, e.name.size()), put16(central, extra.size());
    put16(central, 0), put16(central, 0), put16(central, 0), put32(central, 0);  // comment, disk, attributes
    put32(central, zip64 ? 0xffffffff : offset);
    central += e.name + extra;
  }
  const uint64_t cd_offset = file.size(), n = entries.size();
  file += central;
  if (zip64) {
    const uint64_t z_pos = file.size();
    put32(file, 0x06064b50), put64(file, 44), put16(file, 45), put16(file, 45), put32(file, 0), put32(file, 0);
    put64(file, n), put64(file, n), put64(file, central.size()), put64(file, cd_offset);
    put32(file, 0x07064b50), put32(file, 0), put64(file, z_pos), put32(file, 1);
  }
  put32(file, 0x06054b50), put32(file, 0), put16(file, zip64 ? 0xffff : n), put16(file, zip64 ? 0xffff : n);
  put32(file, zip64 ? 0xffffffff : central.size()), put32(file, zip64 ? 0xffffffff : cd_offset), put16(file, 0);
  return file;
}
std::vector<ZipEntry> torchscript_entries() {
  Bytes weights;
  for (int i = 0; i < 3000; ++i) weights += char(i * 7 % 251);
  return {{"m/data.pkl", "\x80\x02pickle", false},
          {"m/code/__torch__.py", Bytes(2000, 'x') + "def forward(self, x):\n  return x\n", true},
          {"m/data/0", weights, false},
          {"m/constants.pkl", "\x80\x02)", false}};
}

}  // namespace

TEST_CASE("every committed TorchScript file passes the archive check", "[archive]") {
  int checked = 0;
  for (const std::string& dir : {kFixtures, std::string(SNN_TEST_DIR) + "/../examples/models/"}) {
    for (const auto& f : std::filesystem::directory_iterator(dir)) {
      if (f.path().extension() != ".pt" || f.path().filename() == "not_torchscript.pt") continue;
      INFO(f.path());
      CHECK_NOTHROW(check_torchscript_archive(f.path().string()));
      ++checked;
    }
  }
  CHECK(checked >= 15);  // the fixtures and both example models were found
}

TEST_CASE("files that are not TorchScript archives are named as such", "[archive]") {
  // torch.save(state_dict): a valid ZIP with data.pkl but neither constants.pkl nor code/.
  const std::string state_dict = kFixtures + "not_torchscript.pt";
  CHECK_THAT(check_error(state_dict), Contains(state_dict) && Contains("not a TorchScript archive") && Contains("torch.jit.script"));
  CHECK_THAT(check_error(write_temp("archive_empty.pt", "")), Contains("not a TorchScript archive") && Contains("not a ZIP"));
  CHECK_THAT(check_error(write_temp("archive_text.pt", "not a model\n")), Contains("not a ZIP"));
  CHECK_THAT(check_error(snn_test::temp_path("archive_missing.pt")), Contains("cannot open"));
  const std::string dir = snn_test::temp_path("archive_dir.pt");
  std::filesystem::create_directories(dir);
  CHECK_THAT(check_error(dir), Contains(dir) && Contains("is a directory"));
  // A ZIP whose entries are not under one directory, and an empty ZIP.
  CHECK_THAT(check_error(write_temp("archive_flat.pt", make_zip({{"data.pkl", "x"}}, false))),
             Contains("first entry 'data.pkl' is not in a directory"));
  CHECK_THAT(check_error(write_temp("archive_nothing.pt", make_zip({}, false))), Contains("an empty ZIP archive"));
}

TEST_CASE("a flipped byte in a tensor's data fails its CRC-32, naming the entry", "[archive]") {
  Bytes b = read_file(kFixtures + "seq_scripted.pt");
  const Located l = locate(b, "seq_scripted/data/7");  // the second conv's weights
  REQUIRE(l.size > 100);
  b[l.data + l.size / 2] ^= 0x10;
  const std::string path = write_temp("archive_bitflip.pt", b);
  CHECK_THAT(check_error(path), Contains(path + ": corrupted TorchScript archive: entry 'seq_scripted/data/7' fails its CRC-32 check") &&
                                    Contains("stored 0x") && Contains("computed 0x"));
}

TEST_CASE("a damaged deflated code entry is caught, naming the entry", "[archive]") {
  Bytes b = read_file(kFixtures + "seq_scripted.pt");
  const std::string name = "seq_scripted/code/__torch__/torch/nn/modules/container.py";
  const Located l = locate(b, name);
  REQUIRE(get16(b, l.central + 10) == 8);  // deflated
  b[l.data + l.size / 2] ^= 0x55;
  const std::string msg = check_error(write_temp("archive_deflate.pt", b));
  // A flip in a deflate stream either breaks the stream or changes the output: both name the entry.
  CHECK_THAT(msg, Contains("corrupted TorchScript archive: entry '" + name + "'"));
}

TEST_CASE("truncated archives are reported as truncated", "[archive]") {
  const Bytes b = read_file(kFixtures + "seq_scripted.pt");
  for (size_t keep : {b.size() - 1, b.size() - 22, b.size() - 300, b.size() / 2, size_t(100), size_t(3)}) {
    const std::string path = write_temp("archive_truncated.pt", b.substr(0, keep));
    INFO("kept " << keep << " of " << b.size() << " bytes");
    CHECK_THAT(check_error(path), Contains(path + ": truncated TorchScript archive"));
  }
}

TEST_CASE("a damaged central directory is caught, naming the entry", "[archive]") {
  const Bytes good = read_file(kFixtures + "seq_scripted.pt");
  const Located l = locate(good, "seq_scripted/data/7");
  const size_t end = good.size() - 22;
  Bytes b = good;
  SECTION("a changed name") {
    b[l.central + 46 + std::string("seq_scripted/data/").size()] = 'Z';
    CHECK_THAT(check_error(write_temp("archive_cd.pt", b)), Contains("entry 'seq_scripted/data/Z''s local header names 'seq_scripted/data/7'"));
  }
  SECTION("a changed CRC") {
    set32(b, l.central + 16, get32(b, l.central + 16) ^ 1);
    CHECK_THAT(check_error(write_temp("archive_cd.pt", b)), Contains("entry 'seq_scripted/data/7'") && Contains("CRC-32"));
  }
  SECTION("a changed size") {
    set32(b, l.central + 20, 0x7fffffff);
    set32(b, l.central + 24, 0x7fffffff);
    CHECK_THAT(check_error(write_temp("archive_cd.pt", b)), Contains("entry 'seq_scripted/data/7'"));
  }
  SECTION("a local header offset past the end of the file") {
    set32(b, l.central + 42, 0xfffffff0);
    CHECK_THAT(check_error(write_temp("archive_cd.pt", b)),
               Contains("truncated TorchScript archive: entry 'seq_scripted/data/7' lies beyond the end of the file"));
  }
  SECTION("an entry's signature") {
    b[l.central] = 'X';
    CHECK_THAT(check_error(write_temp("archive_cd.pt", b)), Contains("has a bad signature"));
  }
  SECTION("the directory's offset") {
    set32(b, end + 16, get32(b, end + 16) + 1);
    CHECK_THAT(check_error(write_temp("archive_cd.pt", b)), Contains("corrupted TorchScript archive"));
  }
  SECTION("the entry count") {
    b[end + 10] = char(b[end + 10] + 1), b[end + 8] = char(b[end + 8] + 1);
    CHECK_THAT(check_error(write_temp("archive_cd.pt", b)), Contains("corrupted TorchScript archive"));
  }
}

TEST_CASE("zip64 and deflated archives written by other tools pass, and their damage is caught", "[archive]") {
  for (bool zip64 : {false, true}) {
    INFO("zip64: " << zip64);
    Bytes b = make_zip(torchscript_entries(), zip64);
    CHECK_NOTHROW(check_torchscript_archive(write_temp("archive_own.pt", b)));
    const size_t at = b.find("m/data/0") + 8 + 1500;  // the local header's name comes first: inside the weights
    b[at] ^= 1;
    CHECK_THAT(check_error(write_temp("archive_own.pt", b)), Contains("entry 'm/data/0' fails its CRC-32 check"));
  }
  SECTION("a zip64 end record that points nowhere") {
    Bytes b = make_zip(torchscript_entries(), true);
    const size_t locator = b.size() - 22 - 20;
    REQUIRE(get32(b, locator) == 0x07064b50);
    set32(b, locator + 8, 0xfffffff0);
    CHECK_THAT(check_error(write_temp("archive_own.pt", b)), Contains("zip64 end record lies outside the archive"));
  }
}

TEST_CASE("entries that decompress past their declared size, or overlap, are refused", "[archive]") {
  std::vector<ZipEntry> bomb = torchscript_entries();
  bomb[1].declared_size_delta = 1;  // the code entry declares one byte less than it inflates to
  CHECK_THAT(check_error(write_temp("archive_bomb.pt", make_zip(bomb, false))),
             Contains("entry 'm/code/__torch__.py' decompresses to more than its declared"));

  // Point the constants entry's central record at the data.pkl entry's local header.
  Bytes b = make_zip(torchscript_entries(), false);
  const Located constants = locate(b, "m/constants.pkl");
  set32(b, constants.central + 42, 0);
  CHECK_THAT(check_error(write_temp("archive_overlap.pt", b)), Contains("entry 'm/constants.pkl' overlaps entry 'm/data.pkl'"));
}
