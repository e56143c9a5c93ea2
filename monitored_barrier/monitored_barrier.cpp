#include "monitored_barrier/monitored_barrier.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "comm/rendezvous.h"
#include "core/error.h"
#include "metrics/metrics.h"
#include "store/store.h"

namespace collie {
namespace {

// Barrier number per (group, rank): every member counts its own calls, so the n-th call of each
// rank meets under the same keys (ranks may also be threads of one process, as in tests).
uint64_t next_barrier(const std::string& key) {
  static std::mutex mu;
  static std::map<std::string, uint64_t> counters;
  std::lock_guard<std::mutex> lk(mu);
  return ++counters[key];
}

constexpr const char* kOk = "ok";
// Non-zero ranks wait this much longer than rank 0 so they hear its verdict.
Millis verdict_grace(Millis timeout) { return std::clamp(timeout / 2, Millis(500), Millis(5000)); }

std::string failed_text(int coordinator, const std::vector<int>& missing, Millis timeout) {
  return fmt::format("[Rank {}]: {} {} failed to pass monitoredBarrier in {} ms", coordinator,
                     missing.size() == 1 ? "Rank" : "Ranks", format_ranks(missing),
                     timeout.count());
}

void run_barrier(ProcessGroup& group, Millis timeout, bool wait_all_ranks) {
  if (timeout == kUseGroupTimeout) timeout = group.info().timeout;
  if (!group.info().store) {
    throw InvalidArgument(fmt::format("[Rank {}] monitored_barrier: group {} has no store",
                                      group.rank(), group.info().name));
  }
  Store& store = *group.info().store;
  const int n = group.size(), me = group.rank();
  const std::string base = fmt::format(
      "monitored_barrier/{}", next_barrier(fmt::format("{}/{}", group.info().name, group.rank())));
  const std::string result = base + "/result";
  auto world = [&](int r) { return group.info().global_ranks.at(r); };

  // One request per rank: the others' arrivals are a gather that only rank 0 reads (O(1) at
  // the store per arrival); its timeout reply names every member that did not come.
  if (me != 0) {
    store.gather(base, me, n, {}, Store::GatherRead::kRoot, timeout);
    try {
      store.wait({result}, timeout + verdict_grace(timeout));
    } catch (const StoreError&) {
      throw TimeoutError(fmt::format(
          "[Rank {}]: monitored_barrier {} of group {}: rank {} (the coordinator) gave no verdict "
          "within {} ms; it may be stuck or dead, check its log",
          world(me), base, group.info().name, world(0),
          (timeout + verdict_grace(timeout)).count()));
    }
    const std::string verdict = store.get_string(result);
    if (verdict != kOk) {
      throw TimeoutError(
          fmt::format("[Rank {}]: monitored_barrier of group {} failed; rank {} reported: {}",
                      world(me), group.info().name, world(0), verdict));
    }
    return;
  }

  const Store::GatherResult arrivals =
      store.gather(base, 0, n, {}, Store::GatherRead::kRoot, timeout);
  // Without wait_all_ranks, torch names the first rank that did not pass (it waits for each in
  // turn); the gather waited for all within the same timeout, so that is the lowest missing.
  std::vector<int> missing;
  for (int r : arrivals.missing) {
    missing.push_back(world(r));
    if (!wait_all_ranks) break;
  }
  const std::string verdict = missing.empty() ? kOk : failed_text(world(0), missing, timeout);
  store.set(result, verdict);
  if (!missing.empty()) {
    throw TimeoutError(verdict +
                       " (check that they are alive and reached this barrier; "
                       "COLLIE_DEBUG=DETAIL shows what they called instead)");
  }
}

}  // namespace

void monitored_barrier(ProcessGroup& group, Millis timeout, bool wait_all_ranks) {
  try {
    run_barrier(group, timeout, wait_all_ranks);
  } catch (const TimeoutError&) {
    Metrics::global().record_barrier_timeout(group.info().backend);
    throw;
  }
}

}  // namespace collie
