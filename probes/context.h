#pragma once
// ProbeContext: what every probe runs on. The control plane (a Store every rank reaches) is kept
// apart from the data plane (process groups over the backend) so that a rank whose data link is
// broken still reports its results through the store and finishes; nothing waits past `timeout`.
// Thread safety: a context is used by one thread per rank; the store is thread-safe.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "core/timeout.h"

namespace collie {
class Env;
class Store;
}  // namespace collie

namespace collie::probes {

struct ProbeContext {
  std::shared_ptr<Store> store;  // root control-plane store shared by every rank
  int rank = 0;
  int world = 1;
  std::string backend = "gloo";
  Millis timeout{std::chrono::seconds(10)};  // deadline of every single step
  std::string host;                          // this rank's hostname (filled by exchange_hosts)
  // Hostname of each rank, on rank 0 only (filled by exchange_hosts): only rank 0 plans, merges
  // and reports, so the other ranks never hold the job's N names.
  std::vector<std::string> hosts;
  const Env* env = nullptr;  // nullptr = the process environment
  int next_tag = 0;          // same sequence on every rank: unique store prefixes
  // Set by a driver that must save its results if a perf step hangs past its deadline (the perf
  // watchdog then ends the process): called on the watchdog thread with the reason.
  std::function<void(const std::string& why)> on_hang;
  // The pairwise probe widens a measurement's noise by the share of its time this process waited
  // for a CPU (probes/verdict.h). False where ranks are threads of one process (a simulation of
  // many hosts, scripts/bench/scale/probes_*): that process's wait is then not this rank's.
  bool measure_cpu_wait = true;

  // "probe<N>": a fresh prefix for one probe run; every rank must call it in the same order.
  std::string tag();
};

struct ContextOptions {
  std::string backend = "gloo";
  std::string init_method;  // "" = COLLIE_INIT_METHOD, the backend's own rendezvous, or env://
  Millis timeout{std::chrono::seconds(10)};
  const Env* env = nullptr;
};

// Rendezvous through the launcher environment (collie launch, mpirun, env:// variables) and
// exchange hostnames. Throws what rendezvous() throws.
ProbeContext make_context(const ContextOptions& opts);

// Sets this rank's hostname (ctx.host) and gives rank 0 every rank's (ctx.hosts): one
// Store::gather request per rank, which only rank 0 waits on and reads. Rank 0 throws
// TimeoutError naming the ranks that did not report within max(timeout, 60 s).
// REQUIRES: ctx.store, rank, world set; called once per store (its gather name is fixed).
void exchange_hosts(ProbeContext& ctx, const std::string& hostname);

// This machine's hostname.
std::string local_hostname();

// The world group over ctx.store (created on every call; callers keep it for the probe's life).
std::shared_ptr<ProcessGroup> world_group(ProbeContext& ctx, const std::string& tag);

// A two-rank group {a, b} for one tournament round; only a and b call it (REQUIRES: a < b and
// ctx.rank is a or b). Connects only this pair, so a broken link elsewhere does not stop it.
// Throws (TimeoutError, NetworkError, ...) within ctx.timeout when the pair cannot connect.
std::shared_ptr<ProcessGroup> pair_group(ProbeContext& ctx, const std::string& tag, int a, int b);

// Every rank publishes `value` under tag/key; rank 0 collects all within `deadline` and returns
// one entry per rank (nullopt for ranks that did not report in time). Other ranks return {}.
// collect() over the world: O(1) store requests per rank.
std::vector<std::optional<std::string>> gather_to_root(ProbeContext& ctx, const std::string& key,
                                                       const std::string& value, Millis deadline);

// `member` of `members` (member 0 collects) publishes `value` under "<key>/<member>" and joins
// the gather "<key>/in"; member 0 waits up to `deadline` for the others and returns one entry
// per member (nullopt for members that were not in by then), the others return {} at once.
// Cost: two requests per member (set, gather: nobody polls or waits on N keys) plus one
// multi_get per kCollectBatch members for member 0, so a value missing from a late or dead
// member costs nothing but its own entry. REQUIRES: a fresh key per collection.
inline constexpr int kCollectBatch = 1024;
std::vector<std::optional<std::string>> collect(Store& store, const std::string& key, int member,
                                                int members, const std::string& value,
                                                Millis deadline);

// Store barrier that reports instead of throwing: false when some rank did not arrive in time.
bool try_barrier(ProbeContext& ctx, const std::string& name, Millis deadline);

// Waits for a Work until `deadline`; returns "" on success, else the error message.
std::string wait_for(Work& w, Millis deadline);

}  // namespace collie::probes
