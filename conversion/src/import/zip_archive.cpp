// ZipArchive (see zip_archive.hpp): parse the end records and the central directory once, then check or
// read entries on demand.
#include "import/zip_archive.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "snn/error.hpp"

namespace snn::conversion {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kZip64EndSize = 56, kZip64LocatorSize = 20;
constexpr uint64_t kMaxComment = 0xffff;
constexpr size_t kChunk = 64 * 1024;

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t u32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint64_t u64(const uint8_t* p) { return uint64_t(u32(p)) | uint64_t(u32(p + 4)) << 32; }

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// [offset, offset + length) lies within [0, limit): no overflow whatever the values.
bool within(uint64_t offset, uint64_t length, uint64_t limit) { return offset <= limit && length <= limit - offset; }

}  // namespace

ZipArchive::ZipArchive(std::string path, ZipOptions options)
    : path_(std::move(path)), options_(std::move(options)), in_(kChunk), out_(kChunk) {
  open();
  read_central_directory(find_end_record());
}

ZipArchive::~ZipArchive() = default;

void ZipArchive::fail(const std::string& what) const { throw Error(path_ + ": " + what); }
void ZipArchive::corrupt(const std::string& what) const { fail("corrupted " + options_.format + " archive: " + what); }
void ZipArchive::truncated(const std::string& what) const {
  fail("truncated " + options_.format + " archive: " + what + " (file size " + std::to_string(size_) + " bytes)");
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

void ZipArchive::open() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    fail(options_.is_directory.empty() ? "is a directory, expected a " + options_.format + " archive" : options_.is_directory);
  file_.reset(std::fopen(path_.c_str(), "rb"));
  if (!file_) fail(std::string("cannot open the model file (") + std::strerror(errno) + ")");
  if (fseeko(file_.get(), 0, SEEK_END) != 0) fail("cannot seek in the model file");
  const off_t size = ftello(file_.get());
  if (size < 0) fail("cannot tell the size of the model file");
  size_ = static_cast<uint64_t>(size);
  uint8_t magic[2] = {0, 0};
  if (size_ < 2 || !read_at(0, magic, 2) || magic[0] != 'P' || magic[1] != 'K')
    fail(options_.not_zip.empty() ? "not a " + options_.format + " archive (not a ZIP file)" : options_.not_zip);
}

// Reads exactly n bytes at offset; false when the file is shorter (callers check bounds first).
bool ZipArchive::read_at(uint64_t offset, void* dst, size_t n) {
  if (!within(offset, n, size_)) return false;
  if (fseeko(file_.get(), static_cast<off_t>(offset), SEEK_SET) != 0) return false;
  return std::fread(dst, 1, n, file_.get()) == n;
}

void ZipArchive::read_or_fail(uint64_t offset, void* dst, size_t n, const std::string& what) {
  if (!read_at(offset, dst, n)) fail("cannot read " + what + " at offset " + std::to_string(offset));
}

// The end-of-central-directory record: the last 22 bytes plus a comment of up to 64 KiB. Scan backwards
// for the one whose comment ends exactly at the end of the file.
uint64_t ZipArchive::find_end_record() {
  if (size_ < kEndSize) truncated("no end-of-central-directory record");
  const uint64_t tail_len = std::min<uint64_t>(size_, kEndSize + kMaxComment);
  const uint64_t tail_pos = size_ - tail_len;
  std::vector<uint8_t> tail(tail_len);  // at most 64 KiB + 22
  read_or_fail(tail_pos, tail.data(), tail.size(), "the end of the archive");
  bool seen_signature = false;
  for (uint64_t i = tail_len - kEndSize + 1; i-- > 0;) {
    if (u32(&tail[i]) != kEndSig) continue;
    seen_signature = true;
    if (i + kEndSize + u16(&tail[i + 20]) == tail_len) {
      std::memcpy(end_.data(), &tail[i], kEndSize);
      return tail_pos + i;
    }
  }
  // A record whose comment does not end exactly at the end of the file: junk appended, or a damaged record.
  if (seen_signature) corrupt("the end-of-central-directory record does not match the end of the file");
  truncated("no end-of-central-directory record (the file ends before the archive does)");
}

// The zip64 end record, when a locator precedes the end record: its 64-bit counts replace the 32-bit ones.
void ZipArchive::read_zip64_end(uint64_t end_pos, uint64_t& count, uint64_t& cd_size, uint64_t& cd_offset,
                                uint64_t& cd_limit) {
  uint8_t loc[kZip64LocatorSize];
  if (end_pos < kZip64LocatorSize || !read_at(end_pos - kZip64LocatorSize, loc, sizeof loc) || u32(loc) != kZip64LocatorSig) {
    if (count == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) corrupt("the zip64 end record is missing");
    return;
  }
  const uint64_t loc_pos = end_pos - kZip64LocatorSize;
  const uint64_t z_pos = u64(loc + 8);
  if (!within(z_pos, kZip64EndSize, loc_pos)) corrupt("the zip64 end record lies outside the archive");
  uint8_t z[kZip64EndSize];
  read_or_fail(z_pos, z, sizeof z, "the zip64 end record");
  if (u32(z) != kZip64EndSig) corrupt("the zip64 locator does not point at a zip64 end record");
  if (u32(z + 16) != 0 || u32(z + 20) != 0 || u64(z + 24) != u64(z + 32))
    corrupt("multi-disk archives are not " + options_.format);
  // The 32-bit fields are either saturated or equal to the 64-bit ones.
  if ((count != 0xffff && count != u64(z + 32)) || (cd_size != 0xffffffff && cd_size != u64(z + 40)) ||
      (cd_offset != 0xffffffff && cd_offset != u64(z + 48)))
    corrupt("the zip64 end record disagrees with the end-of-central-directory record");
  count = u64(z + 32);
  cd_size = u64(z + 40);
  cd_offset = u64(z + 48);
  cd_limit = z_pos;
}

void ZipArchive::read_central_directory(uint64_t end_pos) {
  const uint8_t* e = end_.data();
  uint64_t count = u16(e + 10), cd_size = u32(e + 12), cd_offset = u32(e + 16);
  if (u16(e + 4) != 0 || u16(e + 6) != 0 || u16(e + 8) != u16(e + 10))
    corrupt("multi-disk archives are not " + options_.format);
  uint64_t cd_limit = end_pos;  // the central directory ends before the zip64 records or the end record
  read_zip64_end(end_pos, count, cd_size, cd_offset, cd_limit);
  if (!within(cd_offset, cd_size, cd_limit)) {
    if (!within(cd_offset, cd_size, size_)) truncated("the central directory lies beyond the end of the file");
    corrupt("the central directory overlaps the end records");
  }
  if (count > cd_size / kCentralSize) corrupt("the central directory is too small for its " + std::to_string(count) + " entries");
  cd_offset_ = cd_offset;
  uint64_t pos = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) read_central_entry(pos, cd_end, i);
  if (pos != cd_end) corrupt("the central directory's size does not match its entries");
}

void ZipArchive::read_central_entry(uint64_t& pos, uint64_t cd_end, uint64_t index) {
  uint8_t h[kCentralSize];
  const std::string where = "central directory entry " + std::to_string(index);
  if (!within(pos, kCentralSize, cd_end)) corrupt(where + " runs past the central directory");
  read_or_fail(pos, h, sizeof h, where);
  if (u32(h) != kCentralSig) corrupt(where + " has a bad signature");
  const uint64_t name_len = u16(h + 28), extra_len = u16(h + 30), comment_len = u16(h + 32);
  const uint64_t var_len = name_len + extra_len + comment_len;  // < 3 * 64 KiB
  if (!within(pos + kCentralSize, var_len, cd_end)) corrupt(where + " runs past the central directory");
  std::vector<uint8_t> buf(name_len + extra_len);
  read_or_fail(pos + kCentralSize, buf.data(), buf.size(), where);
  ZipEntry en;
  en.name.assign(reinterpret_cast<const char*>(buf.data()), name_len);
  if (en.name.empty()) corrupt(where + " has an empty name");
  const std::string entry = "entry '" + en.name + "'";
  en.flags = u16(h + 8);
  en.method = u16(h + 10);
  en.crc = u32(h + 16);
  en.compressed = u32(h + 20);
  en.uncompressed = u32(h + 24);
  en.local_offset = u32(h + 42);
  if (u16(h + 34) != 0) corrupt(entry + " is on another disk");
  apply_zip64_extra(buf.data() + name_len, extra_len, en, entry);
  if (!by_name_.emplace(en.name, entries_.size()).second) corrupt(entry + " appears twice");
  entries_.push_back(std::move(en));
  pos += kCentralSize + var_len;
}

// Central-directory zip64 extra field (id 1): 64-bit values for exactly the 32-bit fields that are
// saturated, in the order uncompressed size, compressed size, local header offset.
void ZipArchive::apply_zip64_extra(const uint8_t* extra, uint64_t len, ZipEntry& en, const std::string& entry) {
  const bool need_u = en.uncompressed == 0xffffffff, need_c = en.compressed == 0xffffffff,
             need_o = en.local_offset == 0xffffffff;
  bool found = false;
  for (uint64_t p = 0; p + 4 <= len;) {
    const uint16_t id = u16(extra + p), sz = u16(extra + p + 2);
    if (!within(p + 4, sz, len)) corrupt(entry + " has a malformed extra field");
    if (id == 1 && !found) {
      found = true;
      uint64_t q = p + 4;
      const uint64_t end = p + 4 + sz;
      auto take = [&](uint64_t& field) {
        if (q + 8 > end) corrupt(entry + " has a short zip64 extra field");
        field = u64(extra + q);
        q += 8;
      };
      if (need_u) take(en.uncompressed);
      if (need_c) take(en.compressed);
      if (need_o) take(en.local_offset);
    }
    p += 4 + sz;
  }
  if ((need_u || need_c || need_o) && !found) corrupt(entry + " lacks its zip64 extra field");
}

// Checks an entry's method, sizes and local header; returns where its data starts.
uint64_t ZipArchive::data_position(const ZipEntry& en) {
  const std::string entry = "entry '" + en.name + "'";
  if (en.flags & 1) corrupt(entry + " is encrypted");
  if (en.method != 0 && en.method != 8)
    corrupt(entry + " uses compression method " + std::to_string(en.method) + " (only stored and deflated are valid)");
  if (en.method == 0 && en.compressed != en.uncompressed)
    corrupt(entry + " is stored but its compressed and uncompressed sizes differ");
  if (!within(en.local_offset, kLocalSize, cd_offset_)) {
    if (!within(en.local_offset, kLocalSize, size_)) truncated(entry + " lies beyond the end of the file");
    corrupt(entry + "'s local header lies outside the entries' area");
  }
  uint8_t h[kLocalSize];
  read_or_fail(en.local_offset, h, sizeof h, entry);
  if (u32(h) != kLocalSig) corrupt(entry + "'s local header has a bad signature");
  const uint64_t name_len = u16(h + 26), extra_len = u16(h + 28);
  const uint64_t name_pos = en.local_offset + kLocalSize;
  if (!within(name_pos, name_len + extra_len, cd_offset_)) corrupt(entry + "'s local header runs past the entries' area");
  std::string local_name(name_len, '\0');
  read_or_fail(name_pos, local_name.data(), name_len, entry);
  if (local_name != en.name) corrupt(entry + "'s local header names '" + local_name + "'");
  if (u16(h + 8) != en.method) corrupt(entry + "'s local header disagrees on the compression method");
  // Without a data descriptor (flag bit 3) the local header repeats the CRC and sizes (saturated ones
  // live in the local zip64 extra field, which we do not re-read: the central values are checked).
  if (!(en.flags & 8)) {
    const uint32_t lc = u32(h + 18), lu = u32(h + 22);
    if (u32(h + 14) != en.crc || (lc != 0xffffffff && lc != en.compressed) || (lu != 0xffffffff && lu != en.uncompressed))
      corrupt(entry + "'s local header disagrees with the central directory");
  }
  const uint64_t data_pos = name_pos + name_len + extra_len;
  if (!within(data_pos, en.compressed, cd_offset_)) {
    if (!within(data_pos, en.compressed, size_)) truncated(entry + "'s data runs past the end of the file");
    corrupt(entry + "'s data runs into the central directory");
  }
  return data_pos;
}

// Streams an entry's uncompressed bytes to sink and checks its CRC-32; returns where its data ends.
uint64_t ZipArchive::stream(const ZipEntry& en, const Sink& sink) {
  const uint64_t data_pos = data_position(en);
  const uint32_t crc = en.method == 0 ? stream_stored(en, data_pos, sink) : stream_deflated(en, data_pos, sink);
  if (crc != en.crc)
    corrupt("entry '" + en.name + "' fails its CRC-32 check (stored " + hex(en.crc) + ", computed " + hex(crc) + ")");
  return data_pos + en.compressed;
}

uint32_t ZipArchive::stream_stored(const ZipEntry& en, uint64_t pos, const Sink& sink) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t left = en.compressed; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kChunk));
    read_or_fail(pos, in_.data(), n, "entry '" + en.name + "'");
    crc = crc32(crc, in_.data(), static_cast<uInt>(n));
    if (sink) sink(in_.data(), n);
    pos += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

uint32_t ZipArchive::stream_deflated(const ZipEntry& en, uint64_t pos, const Sink& sink) {
  const std::string entry = "entry '" + en.name + "'";
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail("zlib: cannot initialise inflate");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t in_left = en.compressed, produced = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0) {
      if (in_left == 0) corrupt(entry + "'s deflate stream ends early");
      const size_t n = static_cast<size_t>(std::min<uint64_t>(in_left, kChunk));
      read_or_fail(pos, in_.data(), n, entry);
      pos += n;
      in_left -= n;
      z.next_in = in_.data();
      z.avail_in = static_cast<uInt>(n);
    }
    z.next_out = out_.data();
    z.avail_out = static_cast<uInt>(out_.size());
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) corrupt(entry + " does not decompress (zlib: " + (z.msg ? z.msg : "error") + ")");
    const uint64_t n = out_.size() - z.avail_out;
    produced += n;
    // Stop a deflate bomb at the declared size rather than inflating it all.
    if (produced > en.uncompressed) corrupt(entry + " decompresses to more than its declared " + std::to_string(en.uncompressed) + " bytes");
    crc = crc32(crc, out_.data(), static_cast<uInt>(n));
    if (sink) sink(out_.data(), static_cast<size_t>(n));
  }
  if (z.avail_in != 0 || in_left != 0) corrupt(entry + " has data after the end of its deflate stream");
  if (produced != en.uncompressed)
    corrupt(entry + " decompresses to " + std::to_string(produced) + " bytes, not its declared " + std::to_string(en.uncompressed));
  return static_cast<uint32_t>(crc);
}

std::string ZipArchive::read(const ZipEntry& en) {
  if (en.uncompressed > options_.max_entry_size)
    fail("entry '" + en.name + "' is " + std::to_string(en.uncompressed) + " bytes, more than the " +
         std::to_string(options_.max_entry_size) + " bytes snnc reads from one entry");
  std::string data;
  // The declared size is only a claim: reserve what the stored bytes can at most be, grow as data arrives.
  data.reserve(static_cast<size_t>(en.method == 0 ? std::min({en.uncompressed, en.compressed, size_}) : std::min<uint64_t>(en.uncompressed, kChunk)));
  stream(en, [&](const uint8_t* p, size_t n) { data.append(reinterpret_cast<const char*>(p), n); });
  return data;
}

void ZipArchive::verify_all() {
  // In file order, so that overlapping entries (one entry's data inside another's) are caught.
  std::vector<const ZipEntry*> order;
  for (const ZipEntry& e : entries_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const ZipEntry* a, const ZipEntry* b) { return a->local_offset < b->local_offset; });
  uint64_t previous_end = 0;
  std::string previous;
  for (const ZipEntry* e : order) {
    if (e->local_offset < previous_end) corrupt("entry '" + e->name + "' overlaps entry '" + previous + "'");
    previous_end = stream(*e, nullptr);
    previous = e->name;
  }
}

}  // namespace snn::conversion
