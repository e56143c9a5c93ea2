#pragma once
// Which hosts a group spans, for Inspector's n_nodes label. At group creation every rank counts
// itself in under the group's store (a step of the stack, src/stack/stack.cpp; no I/O per op):
// add(collie_host/seen/<host>) says whether it is its host's first rank, which then adds one to
// collie_host/distinct, and every rank then adds one to collie_host/published. A scrape reads
// the two counters; the count is known once published reaches the group's size. O(1) requests
// and bytes per rank and per scrape at any group size (nobody reads the N host names).
//
// Thread safety: node_count may be called from several scrape threads; it never waits (store
// `check` first, then one multi_get of keys known to exist) and talks to a clone of the group's
// store, so a rank parked in a blocking store call does not hold up the scrape.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace collie {

struct GroupTrace;
class ProcessGroup;
class Store;

// Publishes this rank's host name under the group's store (no-op without a store). Called once
// per group when the stack is built. May throw StoreError.
void publish_group_host(const ProcessGroup& pg);

// This machine's host name (gethostname), "unknown" when it cannot be read.
std::string local_host_name();

// What publish_group_host does, on any store: counts `host` in (2 or 3 requests).
void publish_host(Store& store, const std::string& host);

class GroupHosts {
 public:
  // Distinct host names of the group's ranks; nullopt while some rank has not published yet
  // (or the group has no store). Cached once known.
  // REQUIRES: g outlives this object (GroupTraces are kept alive by the flight recorder).
  std::optional<int> node_count(const GroupTrace& g);

 private:
  struct Entry {
    std::shared_ptr<Store> store;  // clone of the group's store, until resolved
    std::optional<int> nodes;
  };
  std::mutex mu_;
  std::map<const GroupTrace*, Entry> groups_;
};

}  // namespace collie
