#include "snn/data_parallel.hpp"

#include <algorithm>
#include <new>
#include <string>

#include "snn/error.hpp"

namespace snn {

void run_collectively(Communicator& comm, const std::function<void()>& fn) {
  std::string error;
  try {
    fn();
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  if (comm.size() == 1) {
    if (!error.empty()) throw Error(error);
    return;
  }
  const std::string first = first_error(comm, error);
  if (!first.empty()) throw Error(first);
}

void deal_blocks(Communicator& comm, const BlockDeal& deal, const BlockWork& work, const BlockTake& take,
                 const RoundDone& round_done) {
  const int64_t n = comm.size(), rank = comm.rank();
  std::vector<double> rows, own(deal.width);
  for (int64_t round0 = deal.first; round0 < deal.count; round0 += n) {
    const int64_t in_round = std::min(n, deal.count - round0);
    const int64_t block = round0 + rank;
    std::fill(own.begin(), own.end(), 0.0);
    if (comm.size() == 1) {
      work(block, own);  // one process: errors propagate as they are
      take(block, own.data());
    } else {
      run_collectively(comm, [&] {
        if (rank < in_round) work(block, own);
      });
      // Each process fills only its own row; the sum of disjoint rows is exact.
      rows.assign(size_t(n) * deal.width, 0.0);
      std::copy(own.begin(), own.end(), rows.begin() + rank * int64_t(deal.width));
      comm.sum(rows);
      for (int64_t j = 0; j < in_round; ++j) take(round0 + j, rows.data() + j * int64_t(deal.width));
    }
    if (round_done) round_done(round0 + in_round);
  }
}

}  // namespace snn
