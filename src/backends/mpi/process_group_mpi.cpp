#include "backends/mpi/process_group_mpi.h"

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <thread>

#include "backends/mpi/mpi_runtime.h"
#include "backends/mpi/mpi_work.h"
#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/log.h"
#include "core/reduce_kernel.h"

namespace collie::mpi {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for `req` with a deadline by test-polling (MPI has no timed wait).
bool test_until(MPI_Request& req, Clock::time_point deadline) {
  for (uint32_t i = 0;; ++i) {
    int flag = 0;
    {
      auto lk = Runtime::get().lock();
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    if (flag) return true;
    if ((i & 255) == 0 && Clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
}


int checked_count(size_t n, const MpiWork& w) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw InvalidArgument(fmt::format(
        "{}: {} elements exceed MPI's int count limit ({}); split the buffer into smaller ops",
        w.label(), n, INT_MAX));
  }
  return static_cast<int>(n);
}

}  // namespace

const Capabilities& ProcessGroupMPI::declared_capabilities() {
  static const Capabilities caps = [] {
    Capabilities c;
    c.backend = "mpi";
    for (OpType t : kAllOpTypes) {
      auto& o = c.at(t);
      o.cpu = true;
      o.cuda = false;  // collie does not assume a CUDA-aware Open MPI build
      o.dtypes = kAllDTypeBits;
      o.reduce_ops = has_reduce_op(t) ? kAllReduceOpBits : 0;
    }
    return c;
  }();
  return caps;
}

ProcessGroupMPI::ProcessGroupMPI(GroupInfo info)
    : ProcessGroup(std::move(info)),
      group_label_(std::make_shared<const std::string>(
          fmt::format("(group {} '{}')", this->info().name, this->info().desc))),
      watchdog_([this](OpType op, uint64_t seq, Millis t) { expire(op, seq, t); }) {
  Runtime& rt = Runtime::get();
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
    if (rc == MPI_SUCCESS && !test_until(req, Clock::now() + this->info().timeout)) {
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
        fmt::format("{}: creating the communicator failed: {}", where, error_string(rc)));
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
    auto mpi_lock = Runtime::get().lock();
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
  auto w = std::make_shared<MpiWork>(call.type, call.seq, call.timeout, rank(), group_label_);
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

// Each case issues the non-blocking call when `req` is set, else the blocking one.
void ProcessGroupMPI::start(const OpCall& c, MpiWork& w, MPI_Request* req) {
  Runtime& rt = Runtime::get();
  const TensorView& t = c.input.data ? c.input : c.output;
  const DType d = t.dtype;
  const MPI_Datatype dt = rt.datatype(d);
  const MPI_Op op = has_reduce_op(c.type) ? rt.op(c.reduce_op, d) : MPI_OP_NULL;
  const int n = size();
  const bool root = rank() == c.root;

  // PreMulSum sums factor * input; scale a copy unless the input is also the output.
  auto premul_source = [&](const TensorView& in, bool in_place) -> const void* {
    if (!has_reduce_op(c.type) || c.reduce_op != ReduceOp::PreMulSum) return in.data;
    if (in_place) {
      scale(in.data, in.numel, d, c.premul_factor);
      return in.data;
    }
    w.scratch.resize(in.nbytes());
    if (in.numel > 0) std::memcpy(w.scratch.data(), in.data, in.nbytes());
    scale(w.scratch.data(), in.numel, d, c.premul_factor);
    return w.scratch.data();
  };
  auto avg_on = [&](const TensorView& out) {
    if (c.reduce_op == ReduceOp::Avg) {
      w.finish = [out, d, n] { divide(out.data, out.numel, d, n); };
    }
  };

  int rc = MPI_SUCCESS;
  const char* fn = "";
  auto lk = rt.lock();
  switch (c.type) {
    case OpType::Send: {
      fn = "send";
      const int cnt = checked_count(c.input.numel, w);
      rc = req ? MPI_Isend(c.input.data, cnt, dt, c.peer, c.tag, comm_, req)
               : MPI_Send(c.input.data, cnt, dt, c.peer, c.tag, comm_);
      break;
    }
    case OpType::Recv: {
      fn = "recv";
      const int cnt = checked_count(c.output.numel, w);
      rc = req ? MPI_Irecv(c.output.data, cnt, dt, c.peer, c.tag, comm_, req)
               : MPI_Recv(c.output.data, cnt, dt, c.peer, c.tag, comm_, MPI_STATUS_IGNORE);
      break;
    }
    case OpType::Broadcast: {
      fn = "bcast";
      const int cnt = checked_count(c.input.numel, w);
      rc = req ? MPI_Ibcast(c.input.data, cnt, dt, c.root, comm_, req)
               : MPI_Bcast(c.input.data, cnt, dt, c.root, comm_);
      break;
    }
    case OpType::AllReduce: {
      fn = "allreduce";
      const int cnt = checked_count(c.input.numel, w);
      premul_source(c.input, true);
      avg_on(c.input);
      rc = req ? MPI_Iallreduce(MPI_IN_PLACE, c.input.data, cnt, dt, op, comm_, req)
               : MPI_Allreduce(MPI_IN_PLACE, c.input.data, cnt, dt, op, comm_);
      break;
    }
    case OpType::Reduce: {
      fn = "reduce";
      const int cnt = checked_count(c.input.numel, w);
      if (root) avg_on(c.input);
      const void* src = root ? MPI_IN_PLACE : premul_source(c.input, false);
      if (root) premul_source(c.input, true);
      void* dst = root ? c.input.data : nullptr;
      rc = req ? MPI_Ireduce(src, dst, cnt, dt, op, c.root, comm_, req)
               : MPI_Reduce(src, dst, cnt, dt, op, c.root, comm_);
      break;
    }
    case OpType::AllGather: {
      fn = "allgather";
      const int cnt = checked_count(c.input.numel, w);
      checked_count(c.output.numel, w);
      rc = req ? MPI_Iallgather(c.input.data, cnt, dt, c.output.data, cnt, dt, comm_, req)
               : MPI_Allgather(c.input.data, cnt, dt, c.output.data, cnt, dt, comm_);
      break;
    }
    case OpType::Gather: {
      fn = "gather";
      const int cnt = checked_count(c.input.numel, w);
      if (root) checked_count(c.output.numel, w);
      void* out = root ? c.output.data : nullptr;
      rc = req ? MPI_Igather(c.input.data, cnt, dt, out, cnt, dt, c.root, comm_, req)
               : MPI_Gather(c.input.data, cnt, dt, out, cnt, dt, c.root, comm_);
      break;
    }
    case OpType::Scatter: {
      fn = "scatter";
      const int cnt = checked_count(c.output.numel, w);
      if (root) checked_count(c.input.numel, w);
      const void* in = root ? c.input.data : nullptr;
      rc = req ? MPI_Iscatter(in, cnt, dt, c.output.data, cnt, dt, c.root, comm_, req)
               : MPI_Scatter(in, cnt, dt, c.output.data, cnt, dt, c.root, comm_);
      break;
    }
    case OpType::ReduceScatter: {
      fn = "reduce_scatter_block";
      checked_count(c.input.numel, w);
      const int cnt = checked_count(c.output.numel, w);
      avg_on(c.output);
      const void* src = premul_source(c.input, false);
      rc = req ? MPI_Ireduce_scatter_block(src, c.output.data, cnt, dt, op, comm_, req)
               : MPI_Reduce_scatter_block(src, c.output.data, cnt, dt, op, comm_);
      break;
    }
    case OpType::AllToAll: {
      checked_count(c.input.numel, w);
      checked_count(c.output.numel, w);
      if (c.input_splits.empty()) {
        fn = "alltoall";
        const int cnt = static_cast<int>(c.input.numel / static_cast<size_t>(n));
        rc = req ? MPI_Ialltoall(c.input.data, cnt, dt, c.output.data, cnt, dt, comm_, req)
                 : MPI_Alltoall(c.input.data, cnt, dt, c.output.data, cnt, dt, comm_);
        break;
      }
      fn = "alltoallv";
      // Layout: send counts, send displacements, recv counts, recv displacements.
      w.counts.assign(4 * static_cast<size_t>(n), 0);
      int* sc = w.counts.data();
      int* sd = sc + n;
      int* rcnt = sd + n;
      int* rd = rcnt + n;
      for (int i = 0; i < n; ++i) {
        sc[i] = static_cast<int>(c.input_splits[i]);
        rcnt[i] = static_cast<int>(c.output_splits[i]);
        if (i > 0) {
          sd[i] = sd[i - 1] + sc[i - 1];
          rd[i] = rd[i - 1] + rcnt[i - 1];
        }
      }
      rc = req ? MPI_Ialltoallv(c.input.data, sc, sd, dt, c.output.data, rcnt, rd, dt, comm_, req)
               : MPI_Alltoallv(c.input.data, sc, sd, dt, c.output.data, rcnt, rd, dt, comm_);
      break;
    }
    case OpType::Barrier: {
      fn = "barrier";
      rc = req ? MPI_Ibarrier(comm_, req) : MPI_Barrier(comm_);
      break;
    }
  }
  if (rc != MPI_SUCCESS) {
    throw BackendError(
        fmt::format("{}: MPI {} ({}) failed: {}; check that every rank passed "
                    "matching counts and roots",
                    w.label(), fn, req ? "non-blocking" : "blocking", error_string(rc)));
  }
}

}  // namespace collie::mpi
