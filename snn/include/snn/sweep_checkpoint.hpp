// Resumable sweeps. A sweep cuts its images into blocks (its batches) and adds their numbers in block
// order; after every round of blocks the running sums and the next block are saved here, so a killed run
// started again with the same command (any number of processes) skips the blocks already done and ends
// with the same numbers as a run that was never interrupted.
//
// The file (HDF5, replaced atomically on every save, written by rank 0 only):
//   /  attrs: format = "snnc-sweep-checkpoint", format_version = 2, job (snn::JobKey text: the options
//      and the contents' digests of the model and of every data file; a file of another job is refused,
//      naming the first field that differs), digest (SHA-256 over everything a resume trusts, below)
//   /parts/KEY  (one per sweep of the job, e.g. per --compare method) attrs next_block, blocks, seconds;
//      dataset sums
// A resume trusts nothing it has not checked: the digest (a flipped bit, an edit), every number (finite,
// whole and in range where it counts something, sums of counts no larger than the images they count),
// the format version. A damaged file is refused with its reason, never resumed, and never modified.
//
// The digest is SHA-256 of, little-endian: "snnc-sweep-checkpoint\0", int64 format_version, uint64
// length + the job text, then per part in byte order of KEY: uint64 length + KEY, float64 next_block,
// float64 blocks, float64 seconds, uint64 count + float64 sums (tests/fuzz/make_seeds.py writes the same).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "snn/communicator.hpp"
#include "snn/job_key.hpp"

namespace snn {

struct SweepPartial {
  int64_t next_block = 0;  // blocks 0..next_block-1 are in sums
  int64_t blocks = 0;      // of this many
  double seconds = 0.0;    // simulation wall time spent on them (over earlier runs too)
  std::vector<double> sums;
};

// What a sweep's saved part must look like to be resumed (run_sweep's own numbers).
struct SweepLayout {
  int64_t blocks = 0;      // the sweep's blocks
  size_t width = 0;        // numbers in sums
  int64_t counted = 0;     // sums[0..counted) count correct predictions (one per step)
  int64_t images = 0;      // in the sweep
  int64_t batch_size = 0;  // images per block (the last may hold fewer)
};

class SweepCheckpoint {
 public:
  // Reads `path` on rank 0 when it exists (refusing, with the reason and naming the file, one that is not
  // a checkpoint, is damaged, or belongs to another job) and shares what it holds with every process.
  SweepCheckpoint(std::string path, JobKey job, Communicator& comm);

  const std::string& path() const { return path_; }
  // The saved state of sweep `key`, if any, as read (checked for damage, not against a layout).
  std::optional<SweepPartial> find(const std::string& key) const;
  // The same, refused (Error naming the file and the part) unless it fits `layout`.
  std::optional<SweepPartial> find(const std::string& key, const SweepLayout& layout) const;
  // Records `key`'s state; rank 0 rewrites the file (temp file + rename), so a kill at any moment leaves
  // either the previous or the new checkpoint.
  void save(const std::string& key, const SweepPartial& partial);
  // Once the results are written, the checkpoint has served (rank 0 deletes it).
  void remove();

 private:
  std::string path_;
  JobKey job_;
  Communicator& comm_;
  std::map<std::string, SweepPartial> parts_;
};

}  // namespace snn
