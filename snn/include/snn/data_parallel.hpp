// Data parallelism over the processes of a Communicator, with results that do not depend on how many
// there are. Work is cut into fixed blocks (a sweep's batches) that are dealt in rounds: in round r
// process p runs block r·size + p. Each block reports a row of numbers; after every round every process
// receives the round's rows and takes them in block order, so sums come out bit for bit as one process
// adding block after block. A failure on any process ends the round on every process with the same
// snn::Error (the first failing rank's message) instead of leaving the others waiting.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "snn/communicator.hpp"

namespace snn {

struct BlockDeal {
  int64_t first = 0;  // blocks first..count-1 (first > 0 when resuming)
  int64_t count = 0;
  size_t width = 0;   // numbers per block row
};

using BlockWork = std::function<void(int64_t block, std::vector<double>& row)>;  // row comes zeroed
using BlockTake = std::function<void(int64_t block, const double* row)>;
using RoundDone = std::function<void(int64_t blocks_done)>;  // after each round, on every process

void deal_blocks(Communicator& comm, const BlockDeal& deal, const BlockWork& work, const BlockTake& take,
                 const RoundDone& round_done = {});

// Runs fn on every process; if it throws on any, every process throws snn::Error with the message of the
// lowest failing rank (std::bad_alloc reads "out of memory").
void run_collectively(Communicator& comm, const std::function<void()>& fn);

}  // namespace snn
