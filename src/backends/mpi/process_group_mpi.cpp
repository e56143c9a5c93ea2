#include "backends/mpi/process_group_mpi.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <thread>

#include "backends/mpi/mpi_collectives.h"
#include "backends/mpi/mpi_runtime.h"
#include "backends/mpi/mpi_work.h"
#include "comm/rendezvous.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/log.h"

namespace collie {
namespace {

// Waits for `req` with a deadline by test-polling (MPI has no timed wait).
bool test_until(MPI_Request& req, Clock::TimePoint deadline) {
  for (uint32_t i = 0;; ++i) {
    int flag = 0;
    {
      auto lk = MpiRuntime::get().lock();
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    if (flag) return true;
    if ((i & 255) == 0 && Clock::system().now() >= deadline) return false;
    std::this_thread::yield();
  }
}

}  // namespace

const Capabilities& ProcessGroupMPI::declared_capabilities() {
  // collie does not assume a CUDA-aware Open MPI build: host memory only.
  static const Capabilities caps = capabilities_from(
      "mpi", mpi_ops(),
      OpCapability{
          .cpu = true, .cuda = false, .dtypes = kAllDTypeBits, .reduce_ops = kAllReduceOpBits});
  return caps;
}

ProcessGroupMPI::ProcessGroupMPI(GroupInfo info, const Env& /*env*/)
    : ProcessGroup(std::move(info)),
      rt_(MpiRuntime::get()),
      group_label_(std::make_shared<const std::string>(
          fmt::format("(group {} '{}')", this->info().name, this->info().desc))),
      watchdog_([this](OpType op, uint64_t seq, Millis t) { expire(op, seq, t); }) {
  MpiRuntime& rt = rt_;
  const auto& g = this->info().global_ranks;
  const std::string where =
      fmt::format("[Rank {}] mpi group {} '{}'", rank(), this->info().name, this->info().desc);
  for (int r : g) {
    if (r < 0 || r >= rt.world_size()) {
      throw BackendError(fmt::format(
          "{}: world rank {} is outside MPI_COMM_WORLD of {} processes; launch with mpirun -np "
          "matching the job's world size",
          where, r, rt.world_size()));
    }
  }
  if (g[rank()] != rt.world_rank()) {
    throw BackendError(fmt::format(
        "{}: the group says this process is world rank {} but MPI says {}; under mpirun let the "
        "MPI backend pick ranks (no init method, no RANK variable)",
        where, g[rank()], rt.world_rank()));
  }
  std::vector<int> identity(static_cast<size_t>(rt.world_size()));
  std::iota(identity.begin(), identity.end(), 0);
  int rc = MPI_SUCCESS;
  if (g == identity) {
    // Non-blocking dup so a rank that never joins is reported instead of hanging.
    MPI_Request req = MPI_REQUEST_NULL;
    {
      auto lk = rt.lock();
      rc = MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &req);
    }
    if (rc == MPI_SUCCESS && !test_until(req, Clock::system().now() + this->info().timeout)) {
      throw TimeoutError(fmt::format(
          "{}: not every MPI rank created the group within {} ms; every rank must create it", where,
          this->info().timeout.count()));
    }
  } else {
    // Every member arrives within the deadline before the blocking MPI_Comm_create_group.
    if (this->info().store) {
      store_barrier(*this->info().store, "mpi_comm_create", rank(), size(), this->info().timeout);
    }
    auto lk = rt.lock();
    MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(g.size()), g.data(), &group);
    // Tag from the group id keeps concurrent creations of different groups apart.
    const int tag = static_cast<int>(std::hash<std::string>{}(this->info().name) % 30000);
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &comm_);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
  }
  if (rc != MPI_SUCCESS) {
    throw BackendError(
        fmt::format("{}: creating the communicator failed: {}", where, mpi_error_string(rc)));
  }
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  int crank = -1, csize = 0;
  MPI_Comm_rank(comm_, &crank);
  MPI_Comm_size(comm_, &csize);
  if (crank != rank() || csize != size()) {
    throw BackendError(fmt::format("{}: communicator has rank {} of {}, expected {} of {}", where,
                                   crank, csize, rank(), size()));
  }
}

ProcessGroupMPI::~ProcessGroupMPI() { shutdown(); }

void ProcessGroupMPI::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) {
    auto mpi_lock = rt_.lock();
    MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

const Capabilities& ProcessGroupMPI::capabilities() const { return declared_capabilities(); }

std::shared_ptr<Work> ProcessGroupMPI::run(const OpCall& call) {
  if (shut_down_) {
    throw BackendError(
        fmt::format("[Rank {}] mpi {} #{} {}: the group was shut down; create a new one", rank(),
                    op_name(call.type), call.seq, *group_label_));
  }
  auto w = std::make_shared<MpiWork>(call.type, call.seq, call.timeout, rank(), group_label_,
                                     call.async_op);
  if (call.async_op) {
    start(call, *w, &w->request);
    return w;
  }
  watchdog_.arm(call.type, call.seq, call.timeout);
  try {
    start(call, *w, nullptr);
  } catch (...) {
    watchdog_.disarm();
    throw;
  }
  watchdog_.disarm();
  w->mpi_returned();
  return w;
}

void ProcessGroupMPI::expire(OpType op, uint64_t seq, Millis timeout) {
  const std::string msg = fmt::format(
      "[Rank {}] mpi {} #{} {} did not complete within {} ms; some rank may not have called it "
      "or is stuck (check the other ranks; COLLIE_DEBUG=DETAIL checks for desync). A blocking "
      "MPI call cannot be interrupted, so collie ends the job with MPI_Abort; submit with "
      "async_op and wait(timeout) to handle the TimeoutError instead.",
      rank(), op_name(op), seq, *group_label_, timeout.count());
  log(LogLevel::Error, "{}", msg);
  std::fprintf(stderr, "collie: timeout: %s\n", msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitTimeout);
  std::_Exit(kExitTimeout);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

// Issues the op's MPI call (backends/mpi/mpi_collectives.h): non-blocking when `req` is set.
void ProcessGroupMPI::start(const OpCall& c, MpiWork& w, MPI_Request* req) {
  MpiRuntime& rt = rt_;
  const DType d = (c.input.data ? c.input : c.output).dtype;
  const MPI_Op op = has_reduce_op(c.type) ? rt.op(c.reduce_op, d) : MPI_OP_NULL;
  const MpiOpArgs args{c, w, req, comm_, d, rt.datatype(d), op, size(), rank() == c.root};
  auto lk = rt.lock();
  const MpiIssued issued = mpi_issue(args);
  if (issued.rc != MPI_SUCCESS) {
    throw BackendError(
        fmt::format("{}: MPI {} ({}) failed: {}; check that every rank passed "
                    "matching counts and roots",
                    w.label(), issued.function, req ? "non-blocking" : "blocking",
                    mpi_error_string(issued.rc)));
  }
}

}  // namespace collie
