// How snnc runs under mpirun. eval, sweep and calibrate are data-parallel (snn/data_parallel.hpp): every
// process parses the same command, sets up (options, files, model, data, backend), and then works on its
// share; rank 0 alone prints and writes files. Errors end all processes with one message:
//   - errors that every process meets at the same point (parsing, set-up, a failed block of a round)
//     are agreed (snn::first_error): every process learns the first failing rank's message, rank 0
//     prints it, all exit 1 normally;
//   - any other error (one process, mid-collective) is printed by that process, which then aborts the
//     job (MPI_Abort) so that no process waits forever.
// The other commands (info, convert) refuse to run in more than one process.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "snn/communicator.hpp"
#include "snn/job_key.hpp"

namespace snnc {

snn::Communicator& world();
bool is_root();

// Runs set-up work on every process; a failure on any becomes the same snnc::AgreedError on all.
void collectively(const std::function<void()>& fn);
// Every process must run the same job (same command and options; catches mpirun's MPMD form given
// different commands), field by field, the contents of every file included: a rank that was given other options,
// or that sees other bytes under a file's name (a stale copy on one node), is refused with one line
// naming the field (rank 0 prints it).
void agree_on_job(const snn::JobKey& job);
// Data-parallel calibration shares each batch: it needs at least one image per process (`option` names
// the batch size option).
void require_batch_per_process(int64_t batch, const std::string& option);
// For commands that run in one process only.
void single_process_only(const std::string& command);

// An error every process has, with the same message.
class AgreedError : public std::runtime_error {
 public:
  explicit AgreedError(const std::string& what) : std::runtime_error(what) {}
};

// main's error exits. An error met before any command ran (a bad option) is agreed here too.
int exit_with_agreed_error(const std::string& message);
// message: "error: ..." or "internal error: ..."; one process exits, more abort the job.
[[noreturn]] void abort_with_error(const std::string& message, int code);

}  // namespace snnc
