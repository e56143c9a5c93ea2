#pragma once
// The flight-recorder dumps of a synthetic training job at any N, with a chosen hang, written by
// a real FlightRecorder per rank (collie's JSON or PyTorch's pickle), for the analyzer's scale
// tests and scripts/bench/scale/analyze_scale.sh.
//
// The job: hosts of `per_host` ranks ("node0001", ...); groups "0" (every rank, default_pg),
// "1" (every rank, aux_pg), one tensor-parallel group per host (tp<h>) and one data-parallel
// group per local rank (dp<l>). Each step is tp all_gather, tp reduce_scatter, dp all_reduce,
// aux all_reduce, world all_reduce; enough steps run that each ring (`entries` ops) wraps. In the
// last step the hang happens: every rank runs its program for that step and an op completes only
// once every member of its group has reached it; what is left in flight stays "started", the
// lowest rank in flight has its op failed (its timeout fired: the dumps are "failure" dumps
// written `hung_for_s` after the step began), and the ranks the hang stops do nothing:
// - none: no hang; the dumps are requested ("request") from the running job.
// - frozen-rank: rank `culprit` stops after the previous step (its dump thread still answers).
// - frozen-host: every rank of the culprit's host stops so.
// - never-joined: rank `culprit` stops so and leaves no dump (its process stopped or died).
// - opposite-order: ranks on even hosts call the aux all_reduce before the world one, ranks on
//   odd hosts the other way round: each half waits for the other (a deadlock).
// Thread safety: a SyntheticJob is immutable after construction; dump() is safe from any thread.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collie::testing {

enum class Hang { None, FrozenRank, FrozenHost, NeverJoined, OppositeOrder };
std::optional<Hang> hang_named(std::string_view name);  // "none", "frozen-rank", ...
const char* hang_name(Hang h);

struct SyntheticJobOptions {
  int ranks = 4;
  int per_host = 0;       // 0: min(8, ranks / 2), at least 1
  size_t entries = 2000;  // each rank's ring
  Hang hang = Hang::None;
  int culprit = -1;  // -1: ranks / 2 + 1 (mod ranks)
  double hung_for_s = 30;
  // JSON dumps list pg_config ranks as numbers (dump version 1, what collie wrote before ranges),
  // so an older collie reads them too (scale benchmarks' before/after).
  bool list_ranks = false;
};

class SyntheticJob {
 public:
  explicit SyntheticJob(SyntheticJobOptions o);
  const SyntheticJobOptions& options() const { return o_; }
  int per_host() const { return per_host_; }
  std::string host(int rank) const;  // "node0001"
  // The ranks the analyzer should blame (the frozen rank, host or never-joined rank; none for
  // a healthy job or a deadlock).
  std::vector<int> culprits() const;
  // The dump `rank` writes, as text (JSON) or bytes (pickle); "" when it writes none.
  std::string dump(int rank, bool torch) const;
  // Every rank's dump into `dir` (collie_fr_rank_<r>.json, or nccl_trace_rank_<r>) on `threads`
  // threads; returns the number written.
  size_t write(const std::string& dir, bool torch, int threads = 1) const;

 private:
  bool stopped(int rank) const;  // does nothing in the last step
  SyntheticJobOptions o_;
  int per_host_ = 1;
  size_t steps_ = 0;
  // The last step: how many of its ops each rank completed (its next op, if any, is in flight),
  // and the rank whose op failed.
  std::vector<int> done_;
  int failed_rank_ = -1;
};

}  // namespace collie::testing
