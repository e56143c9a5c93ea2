#include "metrics/group_hosts.h"

#include <unistd.h>

#include <set>
#include <vector>

#include "comm/process_group.h"
#include "core/log.h"
#include "debug/flight_recorder.h"
#include "store/store.h"

namespace collie {

std::string local_host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

std::string group_host_key(int rank) { return "collie_host/" + std::to_string(rank); }

std::optional<int> GroupHosts::node_count(const GroupTrace& g) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = groups_[&g];
  if (e.nodes) return e.nodes;
  if (!g.store) return std::nullopt;
  const int n = g.global_ranks.empty() ? 1 : static_cast<int>(g.global_ranks.size());
  std::vector<std::string> keys;
  for (int r = 0; r < n; ++r) keys.push_back(group_host_key(r));
  try {
    if (!e.store) e.store = g.store->clone();
    if (!e.store->check(keys)) return std::nullopt;
    std::set<std::string> hosts;
    for (const Bytes& h : e.store->multi_get(keys)) hosts.emplace(h.begin(), h.end());
    e.nodes = static_cast<int>(hosts.size());
    e.store.reset();
  } catch (const std::exception& x) {
    // The job's store is gone (rank 0 exited) or unreachable: try again at the next scrape.
    log(LogLevel::Debug, "inspector metrics: host names of group {} not readable: {}", g.pg_id,
        x.what());
    e.store.reset();
  }
  return e.nodes;
}

void publish_group_host(const ProcessGroup& pg) {
  const GroupInfo& i = pg.info();
  if (!i.store) return;
  const std::string host = local_host_name();
  i.store->set(group_host_key(i.rank), Bytes(host.begin(), host.end()));
}

}  // namespace collie
