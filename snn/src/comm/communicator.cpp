#include "snn/communicator.hpp"

#include <cstdlib>

namespace snn {

namespace {
class SingleProcess : public Communicator {
 public:
  std::string name() const override { return "single"; }
  int size() const override { return 1; }
  int rank() const override { return 0; }
  int local_rank() const override { return 0; }
  void sum(int64_t*, size_t) override {}
  void sum(double*, size_t) override {}
  void max(double*, size_t) override {}
  void broadcast(std::string&, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }
  using Communicator::sum;
};
}  // namespace

Communicator& single_process() {
  static SingleProcess single;
  return single;
}

#ifndef SNN_HAVE_MPI
Communicator& world_communicator() { return single_process(); }
bool built_with_mpi() { return false; }
#endif

Share share_of(int64_t count, int parts, int part) {
  return {count * part / parts, count * (part + 1) / parts};
}

std::string first_error(Communicator& comm, const std::string& local_error) {
  // The lowest failing rank r is found as the largest (size − r) over processes; it then tells the rest.
  double key = local_error.empty() ? 0.0 : double(comm.size() - comm.rank());
  comm.max(&key, 1);
  if (key == 0.0) return "";
  std::string message = local_error;
  comm.broadcast(message, comm.size() - int(key));
  return message;
}

}  // namespace snn
