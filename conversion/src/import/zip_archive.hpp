// ZipArchive: the one bounded ZIP reader of snnc (TorchScript .pt checks, torch.export .pt2 archives).
//
// Layout (APPNOTE.TXT): [local header + name + extra + data]... [central directory entries]
// [zip64 end record + zip64 locator]? [end-of-central-directory record + comment]. The central directory
// is the truth; each local header must agree with it. Every offset and size comes from the file, so each
// is checked against the file size with overflow-free arithmetic before it is used; nothing is allocated
// by a size the file claims: data is streamed through fixed 64 KiB buffers, and read() grows its result
// only as bytes actually arrive (a deflate bomb stops at the entry's declared size and at the cap).
//
// Errors are snn::Error starting with the path: "PATH: corrupted <format> archive: entry 'x' ...",
// "PATH: truncated <format> archive: ...".
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace snn::conversion {

struct ZipEntry {
  std::string name;
  uint16_t flags = 0, method = 0;  // method: 0 stored, 8 deflated
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

struct ZipOptions {
  std::string format = "ZIP";      // messages say "corrupted <format> archive", "not <format>"
  std::string not_zip;             // the whole message when the file is not a ZIP ("" : a generic one)
  std::string is_directory;        // the whole message when the path is a directory ("" : a generic one)
  uint64_t max_entry_size = uint64_t(1) << 34;  // read() refuses entries that inflate to more (16 GiB)
};

class ZipArchive {
 public:
  // Opens the file and parses the end records and the central directory (no entry data is read).
  ZipArchive(std::string path, ZipOptions options);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;  // nullptr when absent

  // One entry's bytes, its local header and CRC-32 checked. Throws when larger than max_entry_size.
  std::string read(const ZipEntry& entry);
  // Checks every entry in file order (no overlaps, local headers, sizes, CRC-32) without keeping data.
  void verify_all();

  [[noreturn]] void fail(const std::string& what) const;       // "PATH: what"
  [[noreturn]] void corrupt(const std::string& what) const;    // "PATH: corrupted <format> archive: what"
  [[noreturn]] void truncated(const std::string& what) const;  // "PATH: truncated <format> archive: what ..."

 private:
  using Sink = std::function<void(const uint8_t*, size_t)>;
  void open();
  bool read_at(uint64_t offset, void* dst, size_t n);
  void read_or_fail(uint64_t offset, void* dst, size_t n, const std::string& what);
  uint64_t find_end_record();
  void read_central_directory(uint64_t end_pos);
  void read_zip64_end(uint64_t end_pos, uint64_t& count, uint64_t& cd_size, uint64_t& cd_offset, uint64_t& cd_limit);
  void read_central_entry(uint64_t& pos, uint64_t cd_end, uint64_t index);
  void apply_zip64_extra(const uint8_t* extra, uint64_t len, ZipEntry& en, const std::string& entry);
  uint64_t data_position(const ZipEntry& en);
  uint64_t stream(const ZipEntry& en, const Sink& sink);
  uint32_t stream_stored(const ZipEntry& en, uint64_t pos, const Sink& sink);
  uint32_t stream_deflated(const ZipEntry& en, uint64_t pos, const Sink& sink);

  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  ZipOptions options_;
  std::unique_ptr<std::FILE, Closer> file_;
  uint64_t size_ = 0, cd_offset_ = 0;
  std::array<uint8_t, 22> end_{};
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t> by_name_;
  std::vector<uint8_t> in_, out_;
};

}  // namespace snn::conversion
