#pragma once
// Process-wide MPI state shared by every ProcessGroupMPI: initialization, the lock that serializes
// collie's MPI calls when the library gives less than MPI_THREAD_MULTIPLE, and the
// mapping of collie dtypes / reduce ops to MPI handles (including the user-defined ops that give
// float16 / bfloat16 reductions through core/reduce_kernel.h).
// Thread safety: runtime() is safe from any thread; initialization happens once.
#include <mpi.h>

#include <mutex>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/reduce_op.h"

namespace collie {
class Env;
}

namespace collie {

// The thread level collie asks for when it initializes MPI itself: $COLLIE_MPI_THREAD_LEVEL
// (single, funneled, serialized, multiple), MPI_THREAD_SINGLE when unset. collie's lock makes
// its own calls one at a time below MPI_THREAD_MULTIPLE, and Open MPI gives any level above
// single by taking its internal locks on every call (0.06-0.09 us per small op, 0.25-0.5 us at
// 4-64 KiB on 2 ranks here: scripts/bench/README.md, eighth pass), so single is what a bare MPI
// program (MPI_Init) pays. An application that calls MPI from its own threads initializes MPI
// itself first (collie then uses the level it got) or sets the variable. Throws InvalidArgument on
// any other value.
inline constexpr const char* kMpiThreadLevelVar = "COLLIE_MPI_THREAD_LEVEL";
int mpi_thread_level_to_request(const Env& env);
// "single", "funneled", "serialized", "multiple" (or "unknown").
const char* mpi_thread_level_name(int level);

class MpiRuntime {
 public:
  // Initializes MPI on first use (unless the application already did; at the level
  // mpi_thread_level_to_request gives) and finalizes it at process exit when collie initialized
  // it. Throws BackendError when MPI_Init_thread fails.
  static MpiRuntime& get();

  // Locks MPI calls when the library gives less than MPI_THREAD_MULTIPLE; no-op otherwise.
  std::unique_lock<std::mutex> lock() {
    return thread_multiple_ ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(mu_);
  }
  bool thread_multiple() const { return thread_multiple_; }
  // What MPI_Init_thread or MPI_Query_thread reported.
  int thread_level() const { return thread_level_; }
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }

  MPI_Datatype datatype(DType d) const;
  // The MPI op to use for `op` on `d` (Avg and PreMulSum reduce with Sum; the caller finishes).
  MPI_Op op(ReduceOp op, DType d) const;

 private:
  MpiRuntime();
  bool thread_multiple_ = false;
  int thread_level_ = MPI_THREAD_SINGLE;
  int world_rank_ = 0;
  int world_size_ = 1;
  std::mutex mu_;
  MPI_Datatype half_ = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat_ = MPI_DATATYPE_NULL;
  MPI_Op half_ops_[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
};

// "Open MPI v4.1.4" (first line of MPI_Get_library_version, up to the first comma).
std::string mpi_library_version();
// Text of an MPI error code.
std::string mpi_error_string(int code);
// True when `env` shows an MPI launcher (Open MPI's OMPI_COMM_WORLD_*, PMIx, PMI).
bool under_mpi_launcher(const Env& env);

}  // namespace collie
