#pragma once
// Settings of one perf run (the nccl-tests flags) and the test-only hooks. Plain values.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/reduce_op.h"
#include "core/timeout.h"
#include "perf/traffic.h"

namespace collie {
class Env;
}

namespace collie::perf {

enum class Placement { Out, In, Both };
// How per-rank times become the table's time (-a): rank 0's, the mean, the min or the max.
enum class TimeReduce { Rank0 = 0, Avg = 1, Min = 2, Max = 3 };

// Test-only hooks, read from the environment (documented in src/perf/README.md). They change
// what is measured, so they are refused unless COLLIE_ENABLE_TEST_HOOKS=1 is also set; when
// active they are warned about on stderr and recorded in the run's metadata (`test_hooks`).
//   COLLIE_PERF_TEST_CORRUPT=rank:offset  flips element `offset` of `rank`'s result buffer after
//                                         every validation call, so validation must see #wrong>0.
//   COLLIE_PERF_TEST_DELAY_US=N | rank:N  sleeps N us before every timed call (on `rank` only
//                                         when given), a real, measurable slowdown.
//   COLLIE_PERF_TEST_WORK=N               every rank does N units of fixed CPU work (not a fixed
//                                         time) before every timed call, as a training step
//                                         computes between collectives: a rank whose core
//                                         something else keeps busy arrives late (perf -I).
//   COLLIE_PERF_TEST_STALL=rank:path      while `path` exists, `rank` waits before its next row,
//                                         so its peers wait in that row's first collective: a
//                                         real stall that a test starts and ends with a file.
struct TestHooks {
  int corrupt_rank = -1;
  int64_t corrupt_offset = -1;
  int64_t delay_us = 0;
  int delay_rank = -1;  // -1 = every rank
  int64_t work_units = 0;
  int stall_rank = -1;
  std::string stall_file;
  // The hook variables as set ("NAME=value"), empty when no hook is active.
  std::vector<std::string> active;
  // Throws InvalidArgument on a malformed value, and when a hook is set without
  // COLLIE_ENABLE_TEST_HOOKS=1 (one line naming the variable).
  static TestHooks from_env(const Env& env);
  // One line for stderr and the table, empty when no hook is active.
  std::string warning() const;
};

struct PerfOptions {
  std::vector<std::string> collectives = {"all_reduce"};
  // Asked for as "all" (the collective list's word): a collective the group has too few ranks
  // for (sendrecv on one rank) is left out with a note instead of ending the run.
  bool collectives_all = false;
  int64_t min_bytes = 8;
  int64_t max_bytes = 64 << 20;
  int64_t step_bytes = 1 << 20;  // used when step_factor <= 1
  int64_t step_factor = 2;
  int iters = 20;
  // When true (no -n given), sizes above kItersScaleBytes run fewer iterations so that
  // size * iters stays near kItersScaleBytes * 20 (at least 2 iterations).
  bool scale_iters = false;
  int warmup_iters = 1;
  int agg_iters = 1;
  int cycles = 1;  // -N; 0 = forever
  // --duration: stop after the first cycle that ends past it (0 = no limit). With cycles == 0 or
  // a duration the run is a soak: rank 0 decides at each cycle boundary and broadcasts the
  // decision, and only the last cycle's rows are kept in memory.
  Millis duration{0};
  int check_iters = 1;
  std::vector<ReduceOp> ops = {ReduceOp::Sum};
  std::vector<DType> dtypes = {DType::Float32};
  int root = 0;  // -1 = every root
  TimeReduce average = TimeReduce::Avg;
  bool blocking = false;
  // -G: capture each size's timed loop into a CUDA graph and launch it this many times (0 = off).
  // Only on a group whose device supports graphs (nccl); run_perf throws DeviceError otherwise.
  int graph_launches = 0;
  bool memory_report = false;  // -M: each rank's device memory after every collective's table
  Millis timeout = kUseGroupTimeout;  // -T; kUseGroupTimeout = the group's
  bool report_iters = false;          // -I
  int iter_skip = 0;                  // -K
  bool timestamps = false;            // -S
  Placement placement = Placement::Both;
  uint64_t seed = 0;
  // Who sends how much to whom in collectives with uneven traffic (alltoallv): --traffic, or
  // nccl-tests' NCCL_TESTS_ALLTOALLV_* variables. Every rank must have the same (run_perf checks).
  TrafficSpec traffic;
  // NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: each such row is preceded by its per-rank bytes.
  bool traffic_summary = false;
  TestHooks hooks;
  // Called on the step watchdog's thread just before it ends the process because a step
  // outlived the timeout plus grace (the backend ignored its deadline): the last chance for a
  // caller to save what it has. Gets the one-line reason; must not block for long.
  std::function<void(const std::string& why)> on_hang;
};

inline constexpr int64_t kItersScaleBytes = 1 << 20;

// Iterations for `bytes` under `o` (see PerfOptions::scale_iters).
int iters_for(const PerfOptions& o, int64_t bytes);

// The sweep sizes -b..-e by -f (or -i when -f <= 1), as nccl-tests walks them.
std::vector<int64_t> sweep_sizes(const PerfOptions& o);

// The one conversion of what people write into PerfOptions, behind `collie perf`'s flags and an
// accept spec's perf checks (probes/perf_check.h); sizes go through parse_byte_size
// (core/size.h). Each function throws SettingError: one line, naming the setting as the caller
// calls it (a flag, "-b"; a spec key, "min_bytes"), which setting() returns.
class SettingError : public InvalidArgument {
 public:
  SettingError(const std::string& what, std::string setting)
      : InvalidArgument(what), setting_(std::move(setting)) {}
  const std::string& setting() const { return setting_; }

 private:
  std::string setting_;
};

// Collective names, each a name or a comma-separated list; "all" (when allow_all) is every
// collective. Empty = {"all_reduce"}. "unknown collective 'X' (known: ...)". *asked_all, when
// given, says whether "all" was one of the words.
std::vector<std::string> parse_collectives(const std::vector<std::string>& words, bool allow_all,
                                           const std::string& setting, bool* asked_all = nullptr);
// sum, prod, max, min, avg (PreMulSum is not a user's op), or "all" (when allow_all) for those 5.
std::vector<ReduceOp> parse_ops(const std::string& word, bool allow_all,
                                const std::string& setting);
// nccl-tests dtype names, or "all" (when allow_all) for every one.
std::vector<DType> parse_dtypes(const std::string& word, bool allow_all,
                                const std::string& setting);

// What the sweep's settings are called where they were written.
struct SweepNames {
  std::string min = "-b", max = "-e", step = "-i", factor = "-f";
};
// Checks o's sweep as nccl-tests walks -b..-e: min <= max, and a step factor >= 1: above 1 each
// size is the previous one times the factor, at 1 (nccl-tests' "disabled") the previous one plus
// the step bytes, which must then be > 0.
void check_sweep(const PerfOptions& o, const SweepNames& names = {});

}  // namespace collie::perf
