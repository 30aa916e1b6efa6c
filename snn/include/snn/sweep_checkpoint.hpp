// Resumable sweeps. A sweep cuts its images into blocks (its batches) and adds their numbers in block
// order; after every round of blocks the running sums and the next block are saved here, so a killed run
// started again with the same command (any number of processes) skips the blocks already done and ends
// with the same numbers as a run that was never interrupted.
//
// The file (HDF5, replaced atomically on every save, written by rank 0 only):
//   /  attrs: format = "snnc-sweep-checkpoint", format_version, job (what the numbers belong to: model
//      digest, data, T, encoding, seed, batch size, ...; a file for another job is refused, not reused)
//   /parts/KEY  (one per sweep of the job, e.g. per --compare method) attrs next_block, blocks, seconds;
//      dataset sums
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "snn/communicator.hpp"

namespace snn {

struct SweepPartial {
  int64_t next_block = 0;  // blocks 0..next_block-1 are in sums
  int64_t blocks = 0;      // of this many
  double seconds = 0.0;    // simulation wall time spent on them (over earlier runs too)
  std::vector<double> sums;
};

class SweepCheckpoint {
 public:
  // Reads `path` on rank 0 when it exists (refusing a file of another job or a damaged one, naming the
  // file) and shares what it holds with every process.
  SweepCheckpoint(std::string path, std::string job, Communicator& comm);

  const std::string& path() const { return path_; }
  // The saved state of sweep `key`, if any (its sizes are checked by the caller).
  std::optional<SweepPartial> find(const std::string& key) const;
  // Records `key`'s state; rank 0 rewrites the file (temp file + rename), so a kill at any moment leaves
  // either the previous or the new checkpoint.
  void save(const std::string& key, const SweepPartial& partial);
  // Once the results are written, the checkpoint has served (rank 0 deletes it).
  void remove();

 private:
  std::string path_, job_;
  Communicator& comm_;
  std::map<std::string, SweepPartial> parts_;
};

}  // namespace snn
