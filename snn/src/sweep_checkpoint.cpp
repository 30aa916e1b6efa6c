#include "snn/sweep_checkpoint.hpp"

#include <H5Cpp.h>
#include <cstdio>
#include <sstream>
#include <sys/stat.h>

#include "snn/data_parallel.hpp"
#include "snn/error.hpp"
#include "snn/hdf5_util.hpp"

namespace snn {

namespace {
constexpr const char* kFormat = "snnc-sweep-checkpoint";

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
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

std::map<std::string, SweepPartial> read_file(const std::string& path, const std::string& job) {
  const std::string what = "checkpoint '" + path + "'";
  std::map<std::string, SweepPartial> parts;
  try {
    H5::H5File file(path, H5F_ACC_RDONLY);
    require(h5::has_attr(file, "format") && h5::read_string_attr(file, "format") == kFormat,
            "not an snnc sweep checkpoint (remove it, or choose another --checkpoint)");
    const std::string saved = h5::has_attr(file, "job") ? h5::read_string_attr(file, "job") : "";
    require(saved == job, "it belongs to another job (" + saved + "); this one is " + job +
                              ". Remove it to start over, or choose another --checkpoint");
    H5::Group g = file.openGroup("parts");
    for (const std::string& key : h5::child_names(g)) {
      H5::Group pg = g.openGroup(key);
      SweepPartial p;
      p.next_block = h5::read_count_attr(pg, "next_block");
      p.blocks = h5::read_count_attr(pg, "blocks");
      p.seconds = h5::read_double_attr(pg, "seconds");
      p.sums = h5::read_vector(pg, "sums");
      require(p.blocks >= 1 && p.next_block >= 0 && p.next_block <= p.blocks,
              "part '" + key + "' has next_block " + std::to_string(p.next_block) + " of " +
                  std::to_string(p.blocks) + " blocks");
      parts[key] = std::move(p);
    }
  } catch (const H5::Exception&) {
    throw Error(what + " is damaged or not HDF5 (" + h5::error_stack_text() + "); remove it to start over");
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  return parts;
}
}  // namespace

SweepCheckpoint::SweepCheckpoint(std::string path, std::string job, Communicator& comm)
    : path_(std::move(path)), job_(std::move(job)), comm_(comm) {
  std::string text;
  run_collectively(comm_, [&] {
    if (comm_.is_root() && exists(path_)) text = encode(read_file(path_, job_));
  });
  comm_.broadcast(text, 0);
  if (!text.empty()) parts_ = decode(text);
}

std::optional<SweepPartial> SweepCheckpoint::find(const std::string& key) const {
  auto it = parts_.find(key);
  if (it == parts_.end()) return std::nullopt;
  return it->second;
}

void SweepCheckpoint::save(const std::string& key, const SweepPartial& partial) {
  parts_[key] = partial;
  run_collectively(comm_, [&] {
    if (!comm_.is_root()) return;
    h5::write_atomically(path_, [&](H5::H5File& file) {
      h5::write_attr(file, "format", std::string(kFormat));
      h5::write_attr(file, "format_version", int64_t(1));
      h5::write_attr(file, "job", job_);
      H5::Group g = file.createGroup("parts");
      for (const auto& [k, p] : parts_) {
        H5::Group pg = g.createGroup(k);
        h5::write_attr(pg, "next_block", double(p.next_block));
        h5::write_attr(pg, "blocks", double(p.blocks));
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
