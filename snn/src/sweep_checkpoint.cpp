#include "snn/sweep_checkpoint.hpp"

#include <H5Cpp.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <sys/stat.h>

#include "snn/data_parallel.hpp"
#include "snn/error.hpp"
#include "snn/hdf5_untrusted.hpp"
#include "snn/hdf5_util.hpp"
#include "snn/isolated_read.hpp"
#include "snn/sha256.hpp"

namespace snn {

namespace {
constexpr const char* kFormat = "snnc-sweep-checkpoint";
constexpr int64_t kVersion = 2;
constexpr double kMaxCount = 9007199254740992.0;  // 2^53: whole numbers in doubles are exact below it
const char* const kStartOver = "; remove it to start over, or choose another --checkpoint";

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// A name read from the file, for a message: a hostile file's megabyte-long name stays out of it.
std::string shown(const std::string& name) { return name.size() <= 64 ? name : name.substr(0, 61) + "..."; }

// A part as stored, nothing trusted yet (the numbers as the file holds them).
struct SavedPart {
  double next_block = 0, blocks = 0, seconds = 0;
  std::vector<double> sums;
};
struct SavedCheckpoint {
  std::string job, digest;
  std::map<std::string, SavedPart> parts;
};

// The digest over everything a resume trusts (its layout: sweep_checkpoint.hpp).
std::string checkpoint_digest(const std::string& job, const std::map<std::string, SavedPart>& parts) {
  Sha256 h;
  const auto u64 = [&](uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = uint8_t(v >> (8 * i));
    h.update(b, 8);
  };
  const auto f64 = [&](double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, 8);
    u64(bits);
  };
  const auto text = [&](const std::string& s) { u64(s.size()), h.update(s); };
  h.update(kFormat, std::strlen(kFormat) + 1);
  u64(uint64_t(kVersion));
  text(job);
  for (const auto& [key, p] : parts) {
    text(key);
    f64(p.next_block), f64(p.blocks), f64(p.seconds);
    u64(p.sums.size());
    for (double v : p.sums) f64(v);
  }
  return h.hex_digest();
}

// Rank 0's parts, as text for the broadcast (exact: doubles as hexadecimal floats).
std::string encode(const std::map<std::string, SweepPartial>& parts) {
  std::ostringstream out;
  out << std::hexfloat << parts.size() << '\n';
  for (const auto& [key, p] : parts) {
    out << key.size() << ' ' << key << ' ' << p.next_block << ' ' << p.blocks << ' ' << p.seconds << ' '
        << p.sums.size();
    for (double v : p.sums) out << ' ' << v;
    out << '\n';
  }
  return out.str();
}

std::map<std::string, SweepPartial> decode(const std::string& text) {
  std::istringstream in(text);
  std::map<std::string, SweepPartial> parts;
  size_t n = 0;
  in >> n;
  for (size_t i = 0; i < n; ++i) {
    size_t len = 0, count = 0;
    in >> len;
    in.get();
    std::string key(len, '\0');
    in.read(key.data(), std::streamsize(len));
    SweepPartial p;
    std::string v;
    in >> p.next_block >> p.blocks >> v >> count;
    p.seconds = std::strtod(v.c_str(), nullptr);
    p.sums.resize(count);
    for (auto& s : p.sums) {
      in >> v;
      s = std::strtod(v.c_str(), nullptr);  // hexfloat: operator>> does not parse it in C++17
    }
    parts[key] = std::move(p);
  }
  return parts;
}

void require_attr(const H5::H5Object& obj, const std::string& name, const std::string& where) {
  require(h5::has_attr(obj, name), "is damaged: " + where + " has no attribute '" + name + "'");
}

// Reads the file as it is: its kind and format version are checked, none of its values is trusted yet.
// Errors say what is wrong (the caller names the file). One function, so that it can run elsewhere.
SavedCheckpoint read_file(const std::string& path) {
  SavedCheckpoint saved;
  H5::Exception::dontPrint();  // its reason goes into the message instead
  std::string reading;          // empty while opening
  try {
    H5::H5File file(path, H5F_ACC_RDONLY);
    reading = "objects";
    h5::require_self_contained(file);  // values kept in other files are refused (hdf5_untrusted.hpp)
    reading = "attribute 'format'";
    require(h5::has_attr(file, "format"),
            "is an HDF5 file but not an snnc sweep checkpoint (it has no 'format' attribute)");
    const std::string format = h5::read_string_attr(file, "format");
    require(format == kFormat,
            "is an HDF5 file but not an snnc sweep checkpoint (its format is '" + shown(format) + "')");
    reading = "attribute 'format_version'";
    require_attr(file, "format_version", "the file");
    const double version = h5::read_double_attr(file, "format_version");
    require(version != 1, "was written by an older snnc (format_version 1, without an integrity digest)");
    require(version == double(kVersion), "has format_version " + number_text(version) +
                                             ", which this snnc does not read (it reads " +
                                             std::to_string(kVersion) + ")");
    for (const char* name : {"job", "digest"}) {
      reading = std::string("attribute '") + name + "'";
      require_attr(file, name, "the file");
      (name[0] == 'j' ? saved.job : saved.digest) = h5::read_string_attr(file, name);
    }
    reading = "group 'parts'";
    H5::Group g = file.openGroup("parts");
    for (const std::string& key : h5::child_names(g)) {
      reading = "part '" + shown(key) + "'";
      H5::Group pg = g.openGroup(key);
      SavedPart p;
      for (const char* name : {"next_block", "blocks", "seconds"}) require_attr(pg, name, reading);
      p.next_block = h5::read_double_attr(pg, "next_block");
      p.blocks = h5::read_double_attr(pg, "blocks");
      p.seconds = h5::read_double_attr(pg, "seconds");
      p.sums = h5::read_vector(pg, "sums");
      saved.parts[key] = std::move(p);
    }
  } catch (const H5::Exception& e) {
    std::string why = h5::error_stack_text();
    if (why.empty()) why = e.getDetailMsg();
    if (why.empty()) why = "HDF5 gave no reason";
    throw Error(reading.empty() ? "cannot be opened as an HDF5 file (" + why + ")"
                                : "is damaged: HDF5 cannot read its " + reading + " (" + why + ")");
  } catch (const Error& e) {
    const std::string what = e.what();
    // Messages of the h5 helpers ("attribute 'x' is not a number") say what, not where.
    if (what.rfind("is ", 0) == 0 || what.rfind("was ", 0) == 0 || what.rfind("has ", 0) == 0) throw;
    throw Error("is damaged: " + (reading.rfind("part", 0) == 0 ? reading + ": " : "") + what);
  }
  return saved;
}

double whole_count(double v, double lo, const std::string& name) {
  require(v >= lo && v < kMaxCount && v == std::floor(v),  // false for NaN too
          name + " is " + number_text(v) + ", not a whole number in [" + number_text(lo) + ", 2^53)");
  return v;
}

// A part's numbers, each checked: counts whole and in range, every sum a finite count of at least 0,
// nothing summed before the first block.
SweepPartial checked_part(const std::string& key, const SavedPart& s) {
  const std::string where = "is damaged: part '" + shown(key) + "': ";
  SweepPartial p;
  p.blocks = int64_t(whole_count(s.blocks, 1, where + "blocks"));
  p.next_block = int64_t(whole_count(s.next_block, 0, where + "next_block"));
  require(p.next_block <= p.blocks, where + "next_block " + std::to_string(p.next_block) + " of " +
                                        std::to_string(p.blocks) + " blocks");
  require(std::isfinite(s.seconds) && s.seconds >= 0, where + "seconds is " + number_text(s.seconds) +
                                                          ", not a finite time of at least 0");
  for (size_t i = 0; i < s.sums.size(); ++i) {
    const double v = s.sums[i];
    require(std::isfinite(v) && v >= 0,
            where + "sums[" + std::to_string(i) + "] is " + number_text(v) + ", not a finite count of at least 0");
    require(p.next_block > 0 || v == 0,
            where + "sums[" + std::to_string(i) + "] is " + number_text(v) +
                " but next_block is 0 (nothing summed yet)");
  }
  p.seconds = s.seconds;
  p.sums = s.sums;
  return p;
}

// Everything a resume trusts, checked in order: every number (the most specific reason), the digest (any
// other damage), then the job (another run's file).
std::map<std::string, SweepPartial> checked_parts(const SavedCheckpoint& saved, const JobKey& job) {
  std::map<std::string, SweepPartial> parts;
  for (const auto& [key, s] : saved.parts) parts[key] = checked_part(key, s);
  require(checkpoint_digest(saved.job, saved.parts) == saved.digest,
          "is damaged: its contents do not match their digest (a changed bit, or an edit)");
  JobKey saved_job;
  try {
    saved_job = JobKey::decode(saved.job);
  } catch (const Error& e) {
    throw Error(std::string("is damaged: its job cannot be read (") + e.what() + ")");
  }
  if (const auto d = first_difference(saved_job, job)) throw Error("belongs to another job: " + describe_change(*d));
  return parts;
}
}  // namespace

SweepCheckpoint::SweepCheckpoint(std::string path, JobKey job, Communicator& comm)
    : path_(std::move(path)), job_(std::move(job)), comm_(comm) {
  std::string text;
  run_collectively(comm_, [&] {
    require(!path_.empty(), "--checkpoint: the file name is empty (give a file, or leave out --checkpoint)");
    if (!comm_.is_root() || !exists(path_)) return;
    const std::string named = "checkpoint '" + path_ + "'";
    try {
      // Parsed in a child process: a crash inside libhdf5 cannot take snnc with it (isolated_read.hpp).
      text = read_isolated(named, [&] { return encode(checked_parts(read_file(path_), job_)); });
    } catch (const Error& e) {
      const std::string why = e.what();
      throw Error((why.rfind(named, 0) == 0 ? why : named + " " + why) + kStartOver);
    }
  });
  comm_.broadcast(text, 0);
  if (!text.empty()) parts_ = decode(text);
}

std::optional<SweepPartial> SweepCheckpoint::find(const std::string& key) const {
  auto it = parts_.find(key);
  if (it == parts_.end()) return std::nullopt;
  return it->second;
}

std::optional<SweepPartial> SweepCheckpoint::find(const std::string& key, const SweepLayout& layout) const {
  auto saved = find(key);
  if (!saved) return saved;
  const std::string where = "checkpoint '" + path_ + "': sweep '" + key + "' ";
  require(saved->blocks == layout.blocks && saved->sums.size() == layout.width,
          where + "was saved with " + std::to_string(saved->blocks) + " blocks of " +
              std::to_string(saved->sums.size()) + " numbers, this run has " + std::to_string(layout.blocks) +
              " of " + std::to_string(layout.width) + kStartOver);
  // Correct predictions per step: whole numbers, at most one per image of the blocks done.
  const int64_t done = std::min(layout.images, saved->next_block * layout.batch_size);
  for (int64_t t = 0; t < layout.counted && size_t(t) < saved->sums.size(); ++t) {
    const double v = saved->sums[size_t(t)];
    require(v == std::floor(v) && v <= double(done),
            where + "is damaged: it counts " + number_text(v) + " correct predictions at step " +
                std::to_string(t + 1) + " of " + std::to_string(done) + " images" + kStartOver);
  }
  return saved;
}

void SweepCheckpoint::save(const std::string& key, const SweepPartial& partial) {
  parts_[key] = partial;
  run_collectively(comm_, [&] {
    if (!comm_.is_root()) return;
    std::map<std::string, SavedPart> stored;
    for (const auto& [k, p] : parts_) stored[k] = {double(p.next_block), double(p.blocks), p.seconds, p.sums};
    const std::string job = job_.encode();
    h5::write_atomically(path_, [&](H5::H5File& file) {
      h5::write_attr(file, "format", std::string(kFormat));
      h5::write_attr(file, "format_version", kVersion);
      h5::write_attr(file, "job", job);
      h5::write_attr(file, "digest", checkpoint_digest(job, stored));
      H5::Group g = file.createGroup("parts");
      for (const auto& [k, p] : stored) {
        H5::Group pg = g.createGroup(k);
        h5::write_attr(pg, "next_block", p.next_block);
        h5::write_attr(pg, "blocks", p.blocks);
        h5::write_attr(pg, "seconds", p.seconds);
        h5::write_vector(pg, "sums", p.sums);
      }
    });
  });
}

void SweepCheckpoint::remove() {
  if (comm_.is_root()) std::remove(path_.c_str());
}

}  // namespace snn
