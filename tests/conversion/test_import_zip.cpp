// ZipArchive (conversion/src/import/zip_archive.hpp), the one ZIP reader behind the TorchScript check and
// the .pt2 reader: entries listed and read back byte for byte (stored, deflated, zip64), CRC-32 and size
// damage caught naming the entry, the entry cap, and no crash and no silently wrong bytes on any
// truncation or single-byte corruption of a small archive.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "import/zip_archive.hpp"
#include "snn/error.hpp"
#include "test_util.hpp"

using Catch::Contains;
using snn::conversion::ZipArchive;
using snn::conversion::ZipEntry;
using snn::conversion::ZipOptions;

namespace {

using Bytes = std::string;

void put16(Bytes& b, uint64_t v) { b += char(v & 0xff), b += char(v >> 8 & 0xff); }
void put32(Bytes& b, uint64_t v) { put16(b, v & 0xffff), put16(b, v >> 16 & 0xffff); }
void put64(Bytes& b, uint64_t v) { put32(b, v & 0xffffffff), put32(b, v >> 32); }

Bytes deflate_raw(const Bytes& data) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
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

struct Item {
  std::string name;
  Bytes data;
  bool deflate = false;
  int64_t declared_delta = 0;  // declares data.size() + delta uncompressed bytes
};

// A ZIP writer with sizes in the local headers (no data descriptors), optionally zip64 throughout, and
// an optional archive comment.
Bytes make_zip(const std::vector<Item>& items, bool zip64, const std::string& comment = "") {
  Bytes file, central;
  for (const Item& e : items) {
    const Bytes stored = e.deflate ? deflate_raw(e.data) : e.data;
    const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), uInt(e.data.size())));
    const uint64_t usize = uint64_t(int64_t(e.data.size()) + e.declared_delta), offset = file.size();
    const uint16_t method = e.deflate ? 8 : 0;
    put32(file, 0x04034b50), put16(file, 20), put16(file, 0), put16(file, method), put32(file, 0), put32(file, crc);
    put32(file, zip64 ? 0xffffffff : stored.size()), put32(file, zip64 ? 0xffffffff : usize);
    put16(file, e.name.size()), put16(file, 0);
    file += e.name + stored;
    Bytes extra;
    if (zip64) put16(extra, 1), put16(extra, 24), put64(extra, usize), put64(extra, stored.size()), put64(extra, offset);
    put32(central, 0x02014b50), put16(central, 45), put16(central, 45), put16(central, 0), put16(central, method);
    put32(central, 0), put32(central, crc), put32(central, zip64 ? 0xffffffff : stored.size());
    put32(central, zip64 ? 0xffffffff : usize), put16(central, e.name.size()), put16(central, extra.size());
    put16(central, 0), put16(central, 0), put16(central, 0), put32(central, 0);
    put32(central, zip64 ? 0xffffffff : offset);
    central += e.name + extra;
  }
  const uint64_t cd_offset = file.size(), n = items.size();
  file += central;
  if (zip64) {
    const uint64_t z_pos = file.size();
    put32(file, 0x06064b50), put64(file, 44), put16(file, 45), put16(file, 45), put32(file, 0), put32(file, 0);
    put64(file, n), put64(file, n), put64(file, central.size()), put64(file, cd_offset);
    put32(file, 0x07064b50), put32(file, 0), put64(file, z_pos), put32(file, 1);
  }
  put32(file, 0x06054b50), put32(file, 0), put16(file, zip64 ? 0xffff : n), put16(file, zip64 ? 0xffff : n);
  put32(file, zip64 ? 0xffffffff : central.size()), put32(file, zip64 ? 0xffffffff : cd_offset), put16(file, comment.size());
  return file + comment;
}

std::string write_temp(const std::string& name, const Bytes& bytes) {
  const std::string path = snn_test::temp_path(name);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::vector<Item> sample_items() {
  Bytes weights;
  for (int i = 0; i < 5000; ++i) weights += char(i * 31 % 253);
  Bytes text;
  for (int i = 0; i < 600; ++i) text += "{\"node\": " + std::to_string(i) + "}\n";
  return {{"m/archive_format", "pt2"}, {"m/models/model.json", text, true}, {"m/data/weights/weight_0", weights}, {"m/empty", ""}};
}

// Reads every entry; the error message when one fails.
std::string read_all(const std::string& path, std::vector<Bytes>* out = nullptr, ZipOptions opts = {}) {
  try {
    ZipArchive zip(path, opts);
    for (const ZipEntry& e : zip.entries()) {
      Bytes data = zip.read(e);
      if (out) out->push_back(std::move(data));
    }
  } catch (const snn::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("zip: entries are listed and read back byte for byte", "[zip]") {
  const std::vector<Item> items = sample_items();
  for (bool zip64 : {false, true}) {
    INFO("zip64 " << zip64);
    const std::string path = write_temp("zip_sample.zip", make_zip(items, zip64, zip64 ? "" : "a comment"));
    ZipArchive zip(path, {});
    REQUIRE(zip.entries().size() == items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const ZipEntry* e = zip.find(items[i].name);
      REQUIRE(e != nullptr);
      CHECK(e->name == items[i].name);
      CHECK(e->method == (items[i].deflate ? 8 : 0));
      CHECK(e->uncompressed == items[i].data.size());
      CHECK(zip.read(*e) == items[i].data);
    }
    CHECK(zip.find("m/missing") == nullptr);
    CHECK(zip.entries()[1].compressed < zip.entries()[1].uncompressed);  // really deflated
    CHECK_NOTHROW(zip.verify_all());
  }
}

TEST_CASE("zip: a flipped data byte fails the CRC-32, naming the entry", "[zip]") {
  for (const char* name : {"m/data/weights/weight_0", "m/models/model.json"}) {
    Bytes b = make_zip(sample_items(), false);
    const size_t at = b.find(name) + std::string(name).size() + 40;  // inside the entry's data
    b[at] = char(b[at] ^ 0x04);
    const std::string path = write_temp("zip_crc.zip", b);
    ZipOptions opts;
    opts.format = "torch.export";
    const std::string msg = read_all(path, nullptr, opts);
    INFO(msg);
    CHECK_THAT(msg, Contains(path + ": corrupted torch.export archive: entry '" + std::string(name) + "'"));
    if (std::string(name).find("weight") != std::string::npos) CHECK_THAT(msg, Contains("fails its CRC-32 check"));
  }
}

TEST_CASE("zip: entry sizes are checked against the cap, the data and the file", "[zip]") {
  const std::string path = write_temp("zip_cap.zip", make_zip(sample_items(), false));
  ZipOptions small;
  small.max_entry_size = 4096;
  CHECK_THAT(read_all(path, nullptr, small), Contains("entry 'm/models/model.json' is") && Contains("more than the 4096 bytes"));

  std::vector<Item> bomb = sample_items();
  bomb[1].declared_delta = -1;  // inflates to one byte more than declared
  CHECK_THAT(read_all(write_temp("zip_bomb.zip", make_zip(bomb, false))),
             Contains("entry 'm/models/model.json' decompresses to more than its declared"));
  std::vector<Item> shortfall = sample_items();
  shortfall[1].declared_delta = 10;
  CHECK_THAT(read_all(write_temp("zip_short.zip", make_zip(shortfall, false))), Contains("decompresses to"));

  Bytes junk = make_zip(sample_items(), false) + "junk";
  CHECK_THAT(read_all(write_temp("zip_junk.zip", junk)), Contains("does not match the end of the file"));
}

TEST_CASE("zip: files that are not ZIP archives are named as such", "[zip]") {
  ZipOptions opts;
  opts.format = "torch.export";
  CHECK_THAT(read_all(write_temp("zip_text.zip", "hello"), nullptr, opts), Contains("not a torch.export archive (not a ZIP file)"));
  CHECK_THAT(read_all(write_temp("zip_empty.zip", ""), nullptr, opts), Contains("not a ZIP file"));
  CHECK_THAT(read_all(snn_test::temp_path("zip_missing.zip")), Contains("cannot open the model file"));
  const std::string dir = snn_test::temp_path("zip_dir.zip");
  std::filesystem::create_directories(dir);
  CHECK_THAT(read_all(dir, nullptr, opts), Contains(dir + ": is a directory"));
  opts.not_zip = "custom: not mine";
  CHECK_THAT(read_all(write_temp("zip_text.zip", "hello"), nullptr, opts), Contains("zip_text.zip: custom: not mine"));
}

TEST_CASE("zip: every truncation is an error, never a crash", "[zip]") {
  for (bool zip64 : {false, true}) {
    const Bytes full = make_zip(sample_items(), zip64);
    int errors = 0;
    for (size_t keep = 0; keep < full.size(); ++keep) {
      const std::string path = write_temp("zip_trunc.zip", full.substr(0, keep));
      const std::string msg = read_all(path);
      INFO("zip64 " << zip64 << ", kept " << keep << " of " << full.size());
      REQUIRE_FALSE(msg.empty());
      errors += msg.compare(0, path.size() + 2, path + ": ") == 0;
    }
    CHECK(errors == int(full.size()));  // every message starts with the path
  }
}

TEST_CASE("zip: a single corrupted byte anywhere reads as an error or as the very same bytes", "[zip]") {
  const std::vector<Item> items = sample_items();
  for (bool zip64 : {false, true}) {
    const Bytes good = make_zip(items, zip64);
    int caught = 0, harmless = 0;
    for (size_t at = 0; at < good.size(); at += (at < 200 || at + 400 > good.size()) ? 1 : 7) {
      Bytes b = good;
      b[at] = char(b[at] ^ 0x5a);
      std::vector<Bytes> got;
      const std::string msg = read_all(write_temp("zip_flip.zip", b), &got);
      INFO("zip64 " << zip64 << ", flipped byte " << at);
      if (!msg.empty()) {
        ++caught;
        continue;
      }
      // Unchecked fields (times, versions, attributes): the data must be exactly what was written.
      REQUIRE(got.size() == items.size());
      for (size_t i = 0; i < items.size(); ++i) REQUIRE(got[i] == items[i].data);
      ++harmless;
    }
    CHECK(caught > harmless);
  }
}
