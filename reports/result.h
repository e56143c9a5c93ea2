#pragma once
// The perf result model ("collie.perf.v1"): run metadata plus one row per
// collective / dtype / op / root / size / placement. Plain values; copyable; no thread safety
// beyond that of std containers. Documented field by field in docs/results-schema.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.h"  // median, percentile: the ones reports use
#include "reports/arrival.h"

namespace collie::reports {

inline constexpr const char* kSchemaName = "collie.perf.v1";

// Per-iteration statistics of one row (microseconds; cv = stdev / mean, a fraction).
struct IterStats {
  int samples = 0;
  double min_us = 0, p50_us = 0, p95_us = 0, p99_us = 0, max_us = 0, mean_us = 0, cv = 0;
};

// Computes IterStats over `times_us`: p50 the median (midpoint), p95/p99 nearest-rank, as
// collie::median / percentile (core/stats.h).
IterStats compute_iter_stats(std::vector<double> times_us);

struct ResultRow {
  std::string collective;  // "all_reduce", ...
  std::string placement;   // "out" (out-of-place) or "in" (in-place)
  int64_t size_bytes = 0;  // the table's size column
  int64_t count = 0;       // elements per call (the table's count column)
  std::string dtype;       // nccl-tests spelling: "float", "half", ...
  std::string redop;       // "sum", ..., or "none" for non-reductions
  int root = -1;           // -1 for rootless collectives
  double time_us = 0;      // per call, reduced across ranks per -a
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  int64_t wrong = -1;                // elements wrong summed over ranks; -1 = not checked (N/A)
  int wrong_rank = -1;               // first rank that saw a wrong element, -1 if none
  int64_t wrong_offset = -1;         // its first wrong element index, -1 if none
  std::vector<double> rank_time_us;  // per-rank average time per call, indexed by rank
  int slowest_rank = -1;
  IterStats iter;  // per-iteration stats (slowest rank per iteration)
  // The per-iteration times behind `iter` (with -I; empty otherwise), for the rank test of
  // `collie report compare`.
  std::vector<double> samples_us;
  // With -I: each rank's own per-iteration times (indexed by rank, then iteration); samples_us
  // is their per-iteration max. nccl-tests' per_process_max_times_us.
  std::vector<std::vector<double>> rank_samples_us;
  int iter_skip = 0;  // -K: leading iterations left out of samples_us / rank_samples_us
  // With -I on a host runtime: each rank's wait inside the call per iteration (indexed by rank,
  // then iteration, past -K), and who arrived last, by how much (reports/arrival.h). Empty /
  // iters 0 where not measured (a CUDA runtime enqueues the loop; one rank).
  std::vector<std::vector<double>> rank_wait_us;
  ArrivalStats arrival;
  // With -I on Linux: each rank's seconds of waiting for a CPU per second of its timed loop
  // (threads summed, so it can pass 1); empty where not measured. cpu_starved() (arrival.h).
  std::vector<double> rank_cpu_wait;
  int iters = 0;
  int agg_iters = 1;
  int cycle = 0;  // -N run cycle this row belongs to
};

// The device one rank ran on, as nccl-tests' "# Using devices" line and JSON devices[] name it.
struct RankDevice {
  int index = -1;                     // -1: host memory
  std::string bus_id = "cpu";         // "0000:0f:00" for a GPU
  std::string model = "host memory";  // "NVIDIA H100 80GB HBM3"
};

struct RunMeta {
  std::string schema = kSchemaName;
  std::string version;  // collie version
  std::string backend;
  int world_size = 0;
  std::vector<std::string> hosts;   // indexed by rank
  std::vector<RankDevice> devices;  // indexed by rank; empty = host memory everywhere
  std::map<std::string, std::string> library_versions;
  std::map<std::string, std::string> flags;  // the effective flags, as given on the command line
  std::string started_at;                    // ISO 8601 UTC
  std::string finished_at;                   // empty while the run is in progress
  // Test-only hooks that were active ("NAME=value"); such a run is not a measurement.
  std::vector<std::string> test_hooks;
  // Name of the signal that stopped the run ("SIGINT"), empty when it was not interrupted.
  std::string interrupted_by;
};

struct Summary {
  double avg_busbw_gbps = 0;  // nccl-tests "Avg bus bandwidth": mean over all rows
  double peak_busbw_gbps = 0;
  int64_t peak_size_bytes = 0;
  double largest_size_busbw_gbps = 0;  // mean over the rows of the largest size
  int64_t largest_size_bytes = 0;
  int64_t wrong_total = 0;
  std::vector<int> stragglers;  // ranks > 20 % over the median in most rows
  // Ranks that late_ranks() (arrival.h) names in more than half of the rows that carry arrival
  // statistics (-I on a host runtime): who kept the others waiting.
  std::vector<int> arrival_stragglers;
  // Ranks cpu_starved() (arrival.h) names from their CPU waits over the run (run_cpu_waits()).
  std::vector<int> cpu_stragglers;
};

// "Is this normal?": what the link the run's data crossed can carry, the reference its bus
// bandwidth is held against (busbw is normalised to one link's traffic, so a healthy large
// message reaches most of it). Measured or read by probes/link_capacity.h.
struct LinkCapacity {
  std::string kind;  // "loopback-tcp", "memcpy", "nic", "infiniband", "pcie"
  std::string what;  // how it was found: "TCP over 127.0.0.1, measured in-process", ...
  std::string host;  // the host it was measured or read on
  double gbps = 0;   // GB/s; 0 = unknown (then `what` says why)
};

struct RunResult {
  RunMeta meta;
  std::vector<ResultRow> rows;
  std::optional<Summary> summary;        // set when the run completed
  std::optional<LinkCapacity> capacity;  // set when it was measured (collie perf, accept)
};

// Per collective: its peak busbw (any size and placement) as a share of `c.gbps`, in the order
// the collectives first appear in `rows`. Empty when c.gbps is 0.
struct CapacityShare {
  std::string collective;
  double peak_busbw_gbps = 0;
  int64_t size_bytes = 0;
  double percent = 0;
};
std::vector<CapacityShare> capacity_shares(const std::vector<ResultRow>& rows,
                                           const LinkCapacity& c);

// Summary over `rows` (all collectives together). Pure function.
Summary summarize(const std::vector<ResultRow>& rows, int world_size);

// Ranks whose average time exceeds the median of the per-rank times by more than `threshold`
// (0.2 = 20 %) in more than half of `rows`. Rows without per-rank times are ignored.
std::vector<int> find_stragglers(const std::vector<ResultRow>& rows, int world_size,
                                 double threshold = 0.2);

// Summary::arrival_stragglers over `rows`; empty when no row carries arrival statistics.
std::vector<int> find_arrival_stragglers(const std::vector<ResultRow>& rows);
// Each rank's CPU wait over the run: the mean of its rank_cpu_wait over the rows that carry a
// value for every rank (the most ranks any row has); empty when no row does. `rows_used`, when
// given, receives how many rows that was.
std::vector<double> run_cpu_waits(const std::vector<ResultRow>& rows, int* rows_used = nullptr);
// Summary::cpu_stragglers over `rows`: cpu_starved() of run_cpu_waits(), so one rank must queue
// for a core across the run, not in a few short rows (a row's loop lasts tens of ms, in which a
// healthy rank's own threads can queue 0.46 s per s behind its main thread while the other's
// 0.15; see CpuRule for what whole runs measured). Empty when no row carries CPU waits.
std::vector<int> find_cpu_stragglers(const std::vector<ResultRow>& rows);

}  // namespace collie::reports
