#include "parallel.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "snn/data_parallel.hpp"
#include "snn/error.hpp"

namespace snnc {

snn::Communicator& world() { return snn::world_communicator(); }
bool is_root() { return world().is_root(); }

void collectively(const std::function<void()>& fn) {
  try {
    snn::run_collectively(world(), fn);
  } catch (const snn::Error& e) {
    throw AgreedError(e.what());
  }
}

void agree_on_job(const snn::JobKey& job) {
  if (world().size() == 1) return;
  std::string root_job = job.encode();
  world().broadcast(root_job, 0);
  collectively([&] {
    const auto d = snn::first_difference(snn::JobKey::decode(root_job), job);
    if (!d) return;
    const std::string rank = "rank " + std::to_string(world().rank());
    if (d->kind == snn::JobField::Kind::kContents && d->before && d->now)
      throw snn::Error(rank + " reads other contents for " + d->name + " than rank 0: every process of an mpirun "
                       "must see the same files (a stale copy on one node?)");
    throw snn::Error(rank + " was started with " + d->name + " " + snn::quoted_value(d->now) + ", rank 0 with " +
                     snn::quoted_value(d->before) + ": every process of an mpirun must run the same snnc command");
  });
}

void require_batch_per_process(int64_t batch, const std::string& option) {
  if (batch < world().size())
    throw snn::Error(option + " " + std::to_string(batch) + ": each calibration batch is shared by the " +
                     std::to_string(world().size()) + " processes and needs at least one image per process");
}

void single_process_only(const std::string& command) {
  collectively([&] {
    if (world().size() > 1)
      throw snn::Error("snnc " + command + " runs in one process; start it without mpirun (eval, sweep and "
                       "calibrate run data-parallel under mpirun)");
  });
}

int exit_with_agreed_error(const std::string& message) {
  const std::string agreed = world().size() > 1 ? snn::first_error(world(), message) : message;
  if (is_root()) std::fprintf(stderr, "snnc: error: %s\n", agreed.c_str());
  return 1;
}

void abort_with_error(const std::string& message, int code) {
  snn::Communicator& comm = world();
  if (comm.size() == 1) {
    std::fprintf(stderr, "snnc: %s\n", message.c_str());
    std::exit(code);
  }
  // Printed once: an error every process meets (the usual case) ends the job from rank 0 before the
  // others' grace period is over; a rank that alone failed still says so, naming itself.
  if (comm.is_root()) {
    std::fprintf(stderr, "snnc: %s\n", message.c_str());
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::fprintf(stderr, "snnc (rank %d of %d): %s\n", comm.rank(), comm.size(), message.c_str());
  }
  std::fflush(stderr);
  // Under Open MPI's mpirun a process that exits non-zero ends the job (its default policy) without
  // MPI_Abort's banner, which says nothing about the cause. Other launchers get MPI_Abort.
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    std::fflush(stdout);
    std::_Exit(code);
  }
  comm.abort(code);
  std::_Exit(code);  // not reached
}

}  // namespace snnc
