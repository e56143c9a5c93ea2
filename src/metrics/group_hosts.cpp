#include "metrics/group_hosts.h"

#include <unistd.h>

#include <string>
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

namespace {

constexpr const char* kDistinct = "collie_host/distinct";
constexpr const char* kPublished = "collie_host/published";

int64_t counter(const Bytes& b) {
  try {
    return std::stoll(to_string(b));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

void publish_host(Store& store, const std::string& host) {
  // Its host's first rank counts the host; every rank then counts itself, so once `published`
  // reaches the group's size, `distinct` is final.
  if (store.add("collie_host/seen/" + host, 1) == 1) store.add(kDistinct, 1);
  store.add(kPublished, 1);
}

std::optional<int> GroupHosts::node_count(const GroupTrace& g) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = groups_[&g];
  if (e.nodes) return e.nodes;
  if (!g.store) return std::nullopt;
  const int n = g.global_ranks.empty() ? 1 : static_cast<int>(g.global_ranks.size());
  try {
    if (!e.store) e.store = g.store->clone();
    if (!e.store->check({kPublished})) return std::nullopt;
    // `distinct` is set before the `published` that counts the same rank: both exist.
    const std::vector<Bytes> v = e.store->multi_get({kPublished, kDistinct});
    if (counter(v[0]) < n) return std::nullopt;
    const int64_t d = counter(v[1]);
    if (d <= 0) return std::nullopt;
    e.nodes = static_cast<int>(d);
    e.store.reset();
  } catch (const std::exception& x) {
    // The job's store is gone (rank 0 exited) or unreachable: try again at the next scrape.
    log(LogLevel::Debug, "inspector metrics: host count of group {} not readable: {}", g.pg_id,
        x.what());
    e.store.reset();
  }
  return e.nodes;
}

void publish_group_host(const ProcessGroup& pg) {
  const GroupInfo& i = pg.info();
  if (!i.store) return;
  publish_host(*i.store, local_host_name());
}

}  // namespace collie
