// The communicator and the block dealer under mpirun (any number of processes): each collective's result
// against what it must be, and deal_blocks handing every process every block's row in block order.
// Exits 0 on every rank when all checks pass; prints the failures and exits 1 otherwise.
#include <cstdio>
#include <string>
#include <vector>

#include "snn/communicator.hpp"
#include "snn/data_parallel.hpp"
#include "snn/error.hpp"

namespace {
int failures = 0;
void check(bool ok, const std::string& what, int rank) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
    ++failures;
  }
}
}  // namespace

int main() {
  snn::Communicator& comm = snn::world_communicator();
  const int n = comm.size(), r = comm.rank();
  check(snn::built_with_mpi() && comm.name() == "mpi", "an MPI build started by mpirun uses the MPI communicator", r);
  check(r >= 0 && r < n && comm.local_rank() >= 0 && comm.local_rank() < n, "rank and local rank in range", r);

  std::vector<int64_t> ints = {1, r, int64_t(1) << 40};
  comm.sum(ints);
  check(ints[0] == n && ints[1] == int64_t(n) * (n - 1) / 2 && ints[2] == (int64_t(1) << 40) * n, "integer sum", r);
  double m = r * 1.5;
  comm.max(&m, 1);
  check(m == (n - 1) * 1.5, "max", r);
  std::string text = r == n - 1 ? std::string(100000, 'x') + "end" : "";
  comm.broadcast(text, n - 1);
  check(text.size() == 100003 && text.substr(100000) == "end", "broadcast from the last rank", r);

  // Shares cover the items once, in order.
  int64_t covered = 0;
  for (int p = 0; p < n; ++p) {
    const snn::Share s = snn::share_of(10, n, p);
    check(s.first == covered && s.last >= s.first, "shares are contiguous", r);
    covered = s.last;
  }
  check(covered == 10, "shares cover everything", r);

  // Every rank sees every block's row once, in block order, computed by the rank it was dealt to.
  const int64_t blocks = 7;
  std::vector<int64_t> seen;
  snn::deal_blocks(
      comm, {2, blocks, 2},
      [&](int64_t b, std::vector<double>& row) { row = {double(b) * 10.0, double(r)}; },
      [&](int64_t b, const double* row) {
        check(row[0] == double(b) * 10.0 && row[1] == double((b - 2) % n), "row of block " + std::to_string(b), r);
        seen.push_back(b);
      });
  check(seen == std::vector<int64_t>({2, 3, 4, 5, 6}), "blocks taken in order, from the first one asked", r);

  // A failure on one rank reaches all of them, with its message.
  std::string agreed;
  try {
    snn::run_collectively(comm, [&] {
      if (r == n - 1) throw snn::Error("bad file on the last rank");
    });
  } catch (const snn::Error& e) {
    agreed = e.what();
  }
  check(agreed == "bad file on the last rank", "a failure on one rank is every rank's error", r);
  check(snn::first_error(comm, "") == "", "no failure: no error", r);

  double all = failures;
  comm.max(&all, 1);
  if (r == 0) std::printf("%s on %d processes\n", all == 0 ? "communicator: all checks passed" : "communicator: FAILED", n);
  return all == 0 ? 0 : 1;
}
