// The MPI backend under mpirun with 2, 3 and 4 ranks, beyond the op matrix (every declared
// combination runs in tests/backends/conformance): its declared table, uneven splits, in-place
// all_to_all on one buffer, subgroups, init under mpirun, async ops, deadlines. Expected values
// come from the oracle (tests/support/oracle.h).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/conformance/conformance.h"
#include "backends/mpi/mpi_runtime.h"
#include "backends/mpi/mpi_test_data.h"
#include "comm/registry.h"
#include "core/env.h"
#include "core/error.h"
#include "stack/init.h"
#include "store/prefix_store.h"
#include "store/store.h"
#include "support/oracle.h"
#include "support/refusal.h"

namespace collie::test {
namespace {

using testing::Bytes;
using testing::concat;
using testing::expected_reduced;
using testing::pattern;
using testing::reduction_input;

constexpr size_t kCount = 7;  // odd, so no algorithm gets a power-of-two shortcut

TensorView view(Bytes& b, DType d) {
  return TensorView::cpu(b.data(), b.size() / dtype_size(d), d);
}

void finish(const std::shared_ptr<Work>& w) { w->wait(Millis(15000)); }

TEST(MpiBackend, RegisteredWithVersionAndFullCpuCapabilities) {
  const BackendRegistration* reg = find_backend("mpi");
  ASSERT_NE(reg, nullptr);
  EXPECT_NE(reg->version.find("MPI"), std::string::npos) << reg->version;
  for (OpType t : kAllOpTypes) {
    EXPECT_TRUE(reg->capabilities.supports(t, DeviceType::CPU)) << op_name(t);
    EXPECT_FALSE(reg->capabilities.supports(t, DeviceType::CUDA)) << op_name(t);
    for (DType d : kAllDTypes) {
      EXPECT_TRUE(reg->capabilities.supports(t, DeviceType::CPU, d)) << op_name(t);
      if (!has_reduce_op(t)) continue;
      for (ReduceOp r : kAllReduceOps) {
        EXPECT_EQ(reg->capabilities.supports(t, DeviceType::CPU, d, r),
                  !(is_bitwise(r) && is_floating(d)))
            << op_name(t) << " " << dtype_name(d) << " " << reduce_op_name(r);
      }
    }
  }
}

TEST(MpiBackend, AllToAllWithUnevenSplits) {
  ProcessGroup& pg = world();
  const int n = pg.size(), me = pg.rank();
  const DType d = DType::Float64;
  // Rank i sends (i + j) % 3 elements to rank j (zero included).
  std::vector<int64_t> in_splits(n), out_splits(n);
  std::vector<Bytes> parts, want;
  for (int j = 0; j < n; ++j) {
    in_splits[j] = (me + j) % 3;
    out_splits[j] = (j + me) % 3;
    parts.push_back(pattern(d, static_cast<size_t>(in_splits[j]), me, j));
    want.push_back(pattern(d, static_cast<size_t>(out_splits[j]), j, me));
  }
  Bytes in = concat(parts), out(concat(want).size());
  AllToAllOptions o;
  o.input_splits = in_splits;
  o.output_splits = out_splits;
  finish(pg.all_to_all(view(in, d), view(out, d), o));
  EXPECT_EQ(out, concat(want));
}

// One buffer as input and output (nccl-tests' in-place alltoall): MPI forbids aliased buffers,
// the backend passes MPI_IN_PLACE; sync and async.
TEST(MpiBackend, AllToAllInPlaceOnOneBytes) {
  ProcessGroup& pg = world();
  const int n = pg.size(), me = pg.rank();
  const DType d = DType::Int32;
  for (bool async : {false, true}) {
    std::vector<Bytes> parts, want;
    for (int j = 0; j < n; ++j) {
      parts.push_back(pattern(d, kCount, me, j));
      want.push_back(pattern(d, kCount, j, me));
    }
    Bytes buf = concat(parts);
    AllToAllOptions o;
    o.async_op = async;
    finish(pg.all_to_all(view(buf, d), view(buf, d), o));
    EXPECT_EQ(buf, concat(want)) << (async ? "async" : "sync");
  }
}

TEST(MpiBackend, SubgroupInReverseRankOrder) {
  const int n = world().size();
  // World ranks n-1 and 0, so group rank differs from world rank on both members.
  auto sub = make_group({n - 1, 0}, "7");
  int me = world().rank();
  if (me != 0 && me != n - 1) {
    EXPECT_EQ(sub, nullptr);
    return;
  }
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->rank(), me == 0 ? 1 : 0);
  Bytes b = reduction_input(DType::Int32, ReduceOp::Sum, sub->rank(), kCount);
  finish(sub->all_reduce(view(b, DType::Int32)));
  EXPECT_EQ(b, expected_reduced(DType::Int32, ReduceOp::Sum, 2, kCount, 1.0));
  // The conformance cases of two ops on the subgroup (every declared dtype and reduce op).
  for (OpType t : {OpType::AllToAll, OpType::ReduceScatter}) {
    const auto o = testing::conformance::check_declared(*sub, t, {.counts = {kCount}});
    EXPECT_TRUE(o.ok()) << op_name(t) << ": " << o.summary();
  }
  finish(sub->barrier());
}

TEST(MpiBackend, ManyAsyncOpsInFlight) {
  ProcessGroup& pg = world();
  std::vector<Bytes> bufs;
  for (int i = 0; i < 8; ++i)
    bufs.push_back(reduction_input(DType::Float32, ReduceOp::Sum, pg.rank(), 1000, i));
  std::vector<std::shared_ptr<Work>> works;
  AllReduceOptions o;
  o.async_op = true;
  for (auto& b : bufs) works.push_back(pg.all_reduce(view(b, DType::Float32), o));
  for (int i = 7; i >= 0; --i) finish(works[i]);
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(works[i]->is_success());
    EXPECT_EQ(bufs[i], expected_reduced(DType::Float32, ReduceOp::Sum, pg.size(), 1000, 1.0, i));
  }
}

// The thread level: the application's when it initialized MPI (this suite's main asks for
// multiple), else the one COLLIE_MPI_THREAD_LEVEL asks for, single when unset (the suite under
// COLLIE_TEST_MPI_INIT=collie). Below multiple collie takes its own lock around its MPI calls.
TEST(MpiBackend, ThreadLevelIsTheApplicationsOrTheOneAskedFor) {
  world();
  const MpiRuntime& rt = MpiRuntime::get();
  int level = -1;
  MPI_Query_thread(&level);
  EXPECT_EQ(rt.thread_level(), level);
  EXPECT_EQ(rt.thread_multiple(), level == MPI_THREAD_MULTIPLE);
  if (!mpi_initialized_by_collie()) {
    EXPECT_EQ(level, MPI_THREAD_MULTIPLE);
  } else if (std::getenv(kMpiThreadLevelVar) == nullptr) {
    EXPECT_EQ(level, MPI_THREAD_SINGLE);
  } else {
    EXPECT_EQ(level, mpi_thread_level_to_request(Env::process()));
  }
}

TEST(MpiBackend, ThreadLevelVariable) {
  const auto level = [](const char* v) {
    return mpi_thread_level_to_request(MapEnv(MapEnv::Map{{kMpiThreadLevelVar, v}}));
  };
  EXPECT_EQ(mpi_thread_level_to_request(MapEnv(MapEnv::Map{})), MPI_THREAD_SINGLE);
  EXPECT_EQ(level(""), MPI_THREAD_SINGLE);
  EXPECT_EQ(level("single"), MPI_THREAD_SINGLE);
  EXPECT_EQ(level("funneled"), MPI_THREAD_FUNNELED);
  EXPECT_EQ(level("serialized"), MPI_THREAD_SERIALIZED);
  EXPECT_EQ(level("multiple"), MPI_THREAD_MULTIPLE);
  const std::string msg = collie::testing::refusal([&] { level(std::string(5000, 'x').c_str()); });
  EXPECT_NE(msg.find("COLLIE_MPI_THREAD_LEVEL must be single, funneled, serialized or multiple"),
            std::string::npos)
      << "a bad level was accepted, or refused with: " << msg;
  EXPECT_LT(msg.size(), 250u) << "the bad value is quoted whole";
}

// An async op waited on another thread while this one runs a blocking op on the same group:
// below MPI_THREAD_MULTIPLE (the suite under COLLIE_TEST_MPI_INIT=collie) collie's lock keeps
// the two threads' MPI calls one at a time, and both ops complete with the right sums.
TEST(MpiBackend, AsyncOpWaitedOnAnotherThreadWhileABlockingOpRuns) {
  ProcessGroup& pg = world();
  Bytes a = reduction_input(DType::Float32, ReduceOp::Sum, pg.rank(), 1000, 1);
  Bytes b = reduction_input(DType::Float32, ReduceOp::Sum, pg.rank(), kCount, 2);
  AllReduceOptions o;
  o.async_op = true;
  auto w = pg.all_reduce(view(a, DType::Float32), o);
  std::thread waiter([&] { finish(w); });
  finish(pg.all_reduce(view(b, DType::Float32)));
  waiter.join();
  EXPECT_TRUE(w->is_success());
  EXPECT_EQ(a, expected_reduced(DType::Float32, ReduceOp::Sum, pg.size(), 1000, 1.0, 1));
  EXPECT_EQ(b, expected_reduced(DType::Float32, ReduceOp::Sum, pg.size(), kCount, 1.0, 2));
}

// Under mpirun the backend is its own rendezvous: no init method, no MASTER_ADDR; rank 0's
// TcpStore address travels over MPI and every rank reaches the same store.
TEST(MpiBackend, InitProcessGroupUnderMpirunNeedsNoInitMethod) {
  InitOptions o;
  o.backend = "mpi";
  o.timeout = Millis(20000);
  auto pg = init_process_group(o);
  ASSERT_NE(pg, nullptr);
  const int n = world().size(), me = world().rank();
  EXPECT_EQ(pg->rank(), me);
  EXPECT_EQ(pg->size(), n);
  Store& store = *pg->info().store;
  store.set(fmt::format("hello/{}", me), fmt::format("from {}", me));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(store.get_string(fmt::format("hello/{}", r)), fmt::format("from {}", r));
  }
  Bytes b = reduction_input(DType::Float32, ReduceOp::Sum, me, kCount);
  finish(pg->all_reduce(view(b, DType::Float32)));
  EXPECT_EQ(b, expected_reduced(DType::Float32, ReduceOp::Sum, n, kCount, 1.0));
  // A subgroup with a store meets in a store barrier before MPI_Comm_create_group.
  auto sub = make_group({n - 1, 0}, "9", std::make_shared<PrefixStore>("sub9", pg->info().store));
  if (me == 0 || me == n - 1) {
    ASSERT_NE(sub, nullptr);
    Bytes c = reduction_input(DType::Int8, ReduceOp::Sum, sub->rank(), kCount);
    finish(sub->all_reduce(view(c, DType::Int8)));
    EXPECT_EQ(c, expected_reduced(DType::Int8, ReduceOp::Sum, 2, kCount, 1.0));
    sub->shutdown();
  }
  finish(pg->barrier());
  destroy_process_group(*pg);
}

// Rank 0 starts an async all_reduce that the others join only a second later: wait(timeout)
// must raise a TimeoutError naming op, seq and rank instead of hanging. The late ranks then join,
// so the job still ends cleanly (in any order: mpi_backend_np2_shuffled runs the suite shuffled).
TEST(MpiBackend, LateRankGivesTimeoutErrorNotHang) {
  ProcessGroup& pg = world();
  Bytes a = reduction_input(DType::Int64, ReduceOp::Sum, pg.rank(), 4);
  const uint64_t seq = pg.last_collective_seq() + 1;
  if (pg.rank() == 0) {
    AllReduceOptions o;
    o.async_op = true;
    auto w = pg.all_reduce(view(a, DType::Int64), o);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      w->wait(Millis(200));
      ADD_FAILURE() << "wait returned although the other ranks had not joined";
    } catch (const TimeoutError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(fmt::format("[Rank 0] all_reduce #{}", seq)), std::string::npos) << msg;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_FALSE(w->is_completed());
    finish(w);  // the others join after a second
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    AllReduceOptions o;
    o.async_op = true;  // a non-blocking collective only matches non-blocking ones
    finish(pg.all_reduce(view(a, DType::Int64), o));
  }
  EXPECT_EQ(a, expected_reduced(DType::Int64, ReduceOp::Sum, pg.size(), 4, 1.0));
  finish(pg.barrier());
}

// A synchronous op runs the blocking MPI call, which cannot be interrupted: past its deadline the
// watchdog prints the TimeoutError text and ends the job with MPI_Abort. Run on its own by the
// ctest case mpi_backend_sync_deadline (which expects that text); skipped otherwise.
TEST(MpiBackendAbort, SyncOpPastDeadlineEndsJobWithMessage) {
  if (std::getenv("COLLIE_TEST_EXPECT_ABORT") == nullptr) {
    GTEST_SKIP() << "ends the job; run through ctest -R mpi_backend_sync_deadline";
  }
  ProcessGroup& pg = world();
  Bytes a = reduction_input(DType::Float32, ReduceOp::Sum, pg.rank(), 4);
  if (pg.rank() == 0) {
    AllReduceOptions o;
    o.timeout = Millis(300);
    pg.all_reduce(view(a, DType::Float32), o);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(20));  // never joins; killed by the abort
  }
  ADD_FAILURE() << "the op returned although rank 1 never joined";
}

}  // namespace
}  // namespace collie::test
