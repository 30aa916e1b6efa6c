// snn::Communicator: the processes that share one job (data-parallel sweeps and calibration). The core
// talks to this interface only; the single-process communicator is the default, the MPI one
// (snn/src/comm/mpi_communicator.cpp, the only file that includes mpi.h) exists when snnc is built with
// SNN_WITH_MPI and is launched by mpirun.
//
// Every collective must be called by every process, in the same order, with the same sizes.
// Reductions whose result must not depend on the number of processes use the helpers below: integer
// sums (exact), or rows that each process fills for its own share and that are then added in a fixed
// order (exact: each element has one non-zero contributor).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace snn {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "single" | "mpi"
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // Rank among the processes on this host (picks the GPU of a multi-GPU node).
  virtual int local_rank() const = 0;

  virtual void sum(int64_t* values, size_t n) = 0;  // element-wise sum over processes, in place
  // Doubles: only where the sum is exact whatever the order, so that it is the same for any number of
  // processes: each element has one non-zero contributor (each process fills the rows of its own share,
  // the rest zero), or all values are whole multiples of one number (spike counts times θ).
  virtual void sum(double* values, size_t n) = 0;
  virtual void max(double* values, size_t n) = 0;
  virtual void broadcast(std::string& bytes, int root) = 0;
  virtual void barrier() = 0;
  // Ends every process of the job with this exit code (after this process printed why).
  [[noreturn]] virtual void abort(int code) = 0;

  bool is_root() const { return rank() == 0; }
  void sum(std::vector<int64_t>& v) { sum(v.data(), v.size()); }
  void sum(std::vector<double>& v) { sum(v.data(), v.size()); }
};

// The process's communicator: MPI when built with it and started by an MPI launcher (mpirun, srun),
// the single-process one otherwise. Initialised on first use; MPI is finalised at exit.
Communicator& world_communicator();
// The single-process communicator (for library users that run one process, and for tests).
Communicator& single_process();
// Whether this build can run under MPI.
bool built_with_mpi();

// [first, last) of `count` items dealt in contiguous shares to `parts` processes: share p gets
// ⌊count·p/parts⌋ .. ⌊count·(p+1)/parts⌋.
struct Share {
  int64_t first = 0, last = 0;
  int64_t size() const { return last - first; }
};
Share share_of(int64_t count, int parts, int part);

// Whether every process succeeded at a step that each may fail on its own (bad file, bad option): each
// passes its error message (empty = success); returns the message of the lowest failing rank, or "" when
// all succeeded. Every process gets the same answer, so all stop together with one message.
std::string first_error(Communicator& comm, const std::string& local_error);

}  // namespace snn
