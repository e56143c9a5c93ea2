#include "backends/mpi/process_group_mpi.h"

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <functional>
#include <numeric>
#include <thread>

#include "backends/mpi/mpi_runtime.h"
#include "backends/mpi/mpi_work.h"
#include "core/error.h"
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

int checked_count(size_t n, const std::string& label) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw InvalidArgument(fmt::format(
        "{}: {} elements exceed MPI's int count limit ({}); split the buffer into smaller ops",
        label, n, INT_MAX));
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

ProcessGroupMPI::ProcessGroupMPI(GroupInfo info) : ProcessGroup(std::move(info)) {
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
  std::lock_guard<std::mutex> lk(abandoned_mu_);
  // A communicator with abandoned requests is left alone: freeing it could block on them.
  if (!finalized && comm_ != MPI_COMM_NULL && abandoned_.empty()) {
    auto mpi_lock = Runtime::get().lock();
    MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

const Capabilities& ProcessGroupMPI::capabilities() const { return declared_capabilities(); }

std::string ProcessGroupMPI::label(const OpCall& c) const {
  return fmt::format("[Rank {}] mpi {} #{} (group {} '{}')", rank(), op_name(c.type), c.seq,
                     info().name, info().desc);
}

std::shared_ptr<Work> ProcessGroupMPI::run(const OpCall& call) {
  if (shut_down_) {
    throw BackendError(fmt::format("{}: the group was shut down; create a new one", label(call)));
  }
  auto w = std::make_shared<MpiWork>(call.type, call.seq, call.timeout, label(call));
  start(call, *w);
  if (!call.async_op) drive(call, w);
  return w;
}

void ProcessGroupMPI::drive(const OpCall& call, const std::shared_ptr<MpiWork>& w) {
  const auto deadline = Clock::now() + call.timeout;
  for (uint32_t i = 0;; ++i) {
    if (w->poll()) return;
    if ((i & 255) == 0 && Clock::now() >= deadline) break;
    std::this_thread::yield();
  }
  if (w->complete(std::make_exception_ptr(TimeoutError(fmt::format(
          "{} did not complete within {} ms; some rank may not have called it, or is stuck "
          "(check the other ranks, set COLLIE_DEBUG=DETAIL to check for desync)",
          w->label(), call.timeout.count()))))) {
    std::lock_guard<std::mutex> lk(abandoned_mu_);
    abandoned_.push_back(w);
  }
}

void ProcessGroupMPI::start(const OpCall& c, MpiWork& w) {
  Runtime& rt = Runtime::get();
  const TensorView& t = c.input.data ? c.input : c.output;
  const DType d = t.dtype;
  const MPI_Datatype dt = rt.datatype(d);
  const MPI_Op op = has_reduce_op(c.type) ? rt.op(c.reduce_op, d) : MPI_OP_NULL;
  const std::string& lbl = w.label();
  const int n = size();

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

  w.requests.assign(1, MPI_REQUEST_NULL);
  MPI_Request* req = w.requests.data();
  int rc = MPI_SUCCESS;
  const char* fn = "";
  auto lk = rt.lock();
  switch (c.type) {
    case OpType::Send: {
      fn = "MPI_Isend";
      rc =
          MPI_Isend(c.input.data, checked_count(c.input.numel, lbl), dt, c.peer, c.tag, comm_, req);
      break;
    }
    case OpType::Recv: {
      fn = "MPI_Irecv";
      rc = MPI_Irecv(c.output.data, checked_count(c.output.numel, lbl), dt, c.peer, c.tag, comm_,
                     req);
      break;
    }
    case OpType::Broadcast: {
      fn = "MPI_Ibcast";
      rc = MPI_Ibcast(c.input.data, checked_count(c.input.numel, lbl), dt, c.root, comm_, req);
      break;
    }
    case OpType::AllReduce: {
      fn = "MPI_Iallreduce";
      premul_source(c.input, true);
      avg_on(c.input);
      rc = MPI_Iallreduce(MPI_IN_PLACE, c.input.data, checked_count(c.input.numel, lbl), dt, op,
                          comm_, req);
      break;
    }
    case OpType::Reduce: {
      fn = "MPI_Ireduce";
      const int cnt = checked_count(c.input.numel, lbl);
      if (rank() == c.root) {
        premul_source(c.input, true);
        avg_on(c.input);
        rc = MPI_Ireduce(MPI_IN_PLACE, c.input.data, cnt, dt, op, c.root, comm_, req);
      } else {
        rc = MPI_Ireduce(premul_source(c.input, false), nullptr, cnt, dt, op, c.root, comm_, req);
      }
      break;
    }
    case OpType::AllGather: {
      fn = "MPI_Iallgather";
      const int cnt = checked_count(c.input.numel, lbl);
      checked_count(c.output.numel, lbl);
      rc = MPI_Iallgather(c.input.data, cnt, dt, c.output.data, cnt, dt, comm_, req);
      break;
    }
    case OpType::Gather: {
      fn = "MPI_Igather";
      const int cnt = checked_count(c.input.numel, lbl);
      if (rank() == c.root) checked_count(c.output.numel, lbl);
      rc = MPI_Igather(c.input.data, cnt, dt, rank() == c.root ? c.output.data : nullptr, cnt, dt,
                       c.root, comm_, req);
      break;
    }
    case OpType::Scatter: {
      fn = "MPI_Iscatter";
      const int cnt = checked_count(c.output.numel, lbl);
      if (rank() == c.root) checked_count(c.input.numel, lbl);
      rc = MPI_Iscatter(rank() == c.root ? c.input.data : nullptr, cnt, dt, c.output.data, cnt, dt,
                        c.root, comm_, req);
      break;
    }
    case OpType::ReduceScatter: {
      fn = "MPI_Ireduce_scatter_block";
      checked_count(c.input.numel, lbl);
      avg_on(c.output);
      rc = MPI_Ireduce_scatter_block(premul_source(c.input, false), c.output.data,
                                     checked_count(c.output.numel, lbl), dt, op, comm_, req);
      break;
    }
    case OpType::AllToAll: {
      checked_count(c.input.numel, lbl);
      checked_count(c.output.numel, lbl);
      if (c.input_splits.empty()) {
        fn = "MPI_Ialltoall";
        const int cnt = static_cast<int>(c.input.numel / static_cast<size_t>(n));
        rc = MPI_Ialltoall(c.input.data, cnt, dt, c.output.data, cnt, dt, comm_, req);
      } else {
        fn = "MPI_Ialltoallv";
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
        rc = MPI_Ialltoallv(c.input.data, sc, sd, dt, c.output.data, rcnt, rd, dt, comm_, req);
      }
      break;
    }
    case OpType::Barrier: {
      fn = "MPI_Ibarrier";
      rc = MPI_Ibarrier(comm_, req);
      break;
    }
  }
  if (rc != MPI_SUCCESS) {
    throw BackendError(
        fmt::format("{}: {} failed: {}; check that every rank passed matching counts", lbl, fn,
                    error_string(rc)));
  }
}

}  // namespace collie::mpi
