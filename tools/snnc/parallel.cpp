#include "parallel.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

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

void agree_on_job(const std::string& job) {
  std::string root_job = job;
  world().broadcast(root_job, 0);
  collectively([&] {
    if (root_job != job)
      throw snn::Error("rank " + std::to_string(world().rank()) + " was started with another job than rank 0 (" + job +
                       " vs " + root_job + "): every process of an mpirun must run the same snnc command");
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
  std::fprintf(stderr, "snnc (rank %d of %d): %s\n", comm.rank(), comm.size(), message.c_str());
  comm.abort(code);
  std::_Exit(code);  // not reached
}

}  // namespace snnc
