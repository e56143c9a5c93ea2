#pragma once
// Multi-rank test harness: runs a test body on N ranks, each with its own process group, and
// reports per-rank outcomes to the parent. Usable by any backend's tests (gloo, mpi, debug,
// perf).
//
//   auto result = collie::testing::run_ranks(4, [](collie::testing::RankContext& ctx) {
//     std::vector<float> v(8, float(ctx.rank));
//     ctx.pg->all_reduce(collie::TensorView::cpu(v.data(), v.size(), collie::DType::Float32))
//         ->wait();
//     collie::testing::check(v[0] == 6.0f, "rank {} got {}", ctx.rank, v[0]);
//   });
//   EXPECT_TRUE(result.ok()) << result.summary();
//
// Modes:
//   Processes (default when init_process_group is built, i.e. src/comm compiles init.cpp): the
//     parent forks N children (call run_ranks before the test creates any thread), each calls
//     collie::init_process_group(init_method "tcp://127.0.0.1:<free port>") and runs the body,
//     then writes one result record to a pipe and _exit()s.
//   Threads (fallback, or Mode::Threads): ranks are threads of this process sharing a HashStore;
//     the group is created through the backend registry (wrappers applied) as init would.
// Backends: any registered one. The test-only "threads" (a reference ProcessGroup whose ranks are
// threads; Auto picks Threads for it) and "fake" (ops complete at once) are registered by this
// library (test_backends.h):
//   run_ranks(3, body, {.backend = "threads", .mode = Mode::Threads, .stack = false});
// stack = false (Threads only) gives the body the backend group itself, without the wrapper
// stack: for tests that build their own layers over it, or that need the backend's own type.
// After the body, ranks meet at an exit barrier on the group's store before shutting the group
// down, so a fast rank never closes connections slower peers still read from.
// The body fails by throwing (check() below, or any exception); its message is reported.
// A rank that does not report before options.deadline is killed (SIGKILL) and reported as hung;
// result.summary() names the hung ranks. ctx.die() ends a rank abruptly (a peer crash): in
// process mode _exit without closing anything, in thread mode the group is shut down (its sockets
// close, which peers observe the same way) and the rank reports Died.
// Thread safety: call from one thread; not reentrant (children must not call run_ranks).
#include <fmt/format.h>

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/process_group.h"

namespace collie::testing {

enum class Mode { Auto, Processes, Threads };

struct RankContext {
  int rank = 0;
  int world_size = 1;
  std::shared_ptr<ProcessGroup> pg;
  Mode mode = Mode::Threads;  // the mode actually in use
  // Ends this rank abruptly, as a crash would. Never returns.
  [[noreturn]] void die();
};

struct RunOptions {
  std::string backend = "gloo";
  Mode mode = Mode::Auto;
  Millis deadline{60000};       // for the whole run; hung ranks are killed after it
  Millis group_timeout{20000};  // the process group's timeout (rendezvous and ops)
  // Environment variables for the ranks (e.g. COLLIE_DEBUG=DETAIL): set in each child before
  // init_process_group; in thread mode set in this process for the run and restored after.
  std::map<std::string, std::string> env{};
  // The wrapper stack over the backend group (tracing, DETAIL checks), as init_process_group
  // builds it; false (Mode::Threads only): ctx.pg is the bare backend group.
  bool stack = true;
};

enum class RankStatus { Passed, Failed, Died, Hung };
std::string_view rank_status_name(RankStatus s);

struct RankResult {
  int rank = 0;
  RankStatus status = RankStatus::Hung;
  std::string message;  // failure message (Failed), or why it died (Died)
  // Mode::Threads: what the body threw (Failed), for tests that check the exception's type;
  // null otherwise (and always in process mode, where only the message crosses the pipe).
  std::exception_ptr error;
};

struct RunResult {
  Mode mode = Mode::Threads;
  std::vector<RankResult> ranks;
  bool ok() const;  // every rank Passed
  // "rank 2 FAILED: ...; ranks 3, 5 HUNG (killed after 60000 ms)".
  std::string summary() const;
};

RunResult run_ranks(int world_size, const std::function<void(RankContext&)>& body,
                    const RunOptions& opts = {});

// Throws (failing the rank) with a formatted message when cond is false.
template <typename... Args>
void check(bool cond, fmt::format_string<Args...> f, Args&&... args) {
  if (!cond) throw std::runtime_error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace collie::testing
