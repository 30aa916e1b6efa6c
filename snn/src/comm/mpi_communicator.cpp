// The MPI communicator: compiled only when CMake finds MPI (SNN_WITH_MPI); the only file that includes
// mpi.h. MPI is initialised only when an MPI launcher started this process, so a plain `snnc ...` of an
// MPI build runs as one process without touching MPI (no singleton start-up).
// The C API only: the deprecated C++ bindings of some MPIs would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "snn/communicator.hpp"
#include "snn/error.hpp"

namespace snn {

namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string("MPI: ") + call + " failed: " + std::string(text, size_t(len)));
}

bool started_by_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    int provided = 0;
    // Only the main thread calls MPI; OpenMP threads compute between calls.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
    // Errors come back as return codes (turned into snn::Error) instead of aborting inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm local;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
          "MPI_Comm_split_type");
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
  }
  std::string name() const override { return "mpi"; }
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  int local_rank() const override { return local_rank_; }
  void sum(int64_t* v, size_t n) override { reduce(v, n, MPI_INT64_T, MPI_SUM); }
  void sum(double* v, size_t n) override { reduce(v, n, MPI_DOUBLE, MPI_SUM); }
  void max(double* v, size_t n) override { reduce(v, n, MPI_DOUBLE, MPI_MAX); }
  void broadcast(std::string& bytes, int root) override {
    int64_t n = int64_t(bytes.size());
    check(MPI_Bcast(&n, 1, MPI_INT64_T, root, MPI_COMM_WORLD), "MPI_Bcast");
    bytes.resize(size_t(n));
    for (int64_t at = 0; at < n; at += kPiece) {
      const int len = int(std::min<int64_t>(kPiece, n - at));
      check(MPI_Bcast(bytes.data() + at, len, MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast");
    }
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }
  using Communicator::sum;

 private:
  static constexpr int64_t kPiece = int64_t(1) << 30;  // MPI counts are ints: large arrays go in pieces

  template <class T>
  void reduce(T* v, size_t n, MPI_Datatype type, MPI_Op op) {
    for (size_t at = 0; at < n; at += size_t(kPiece)) {
      const int len = int(std::min<size_t>(size_t(kPiece), n - at));
      check(MPI_Allreduce(MPI_IN_PLACE, v + at, len, type, op, MPI_COMM_WORLD), "MPI_Allreduce");
    }
  }

  int size_ = 1, rank_ = 0, local_rank_ = 0;
};

}  // namespace

Communicator& world_communicator() {
  static std::unique_ptr<Communicator> world;
  if (!world) {
    if (!started_by_launcher()) return single_process();
    world = std::make_unique<MpiCommunicator>();
  }
  return *world;
}

bool built_with_mpi() { return true; }

}  // namespace snn
