#pragma once
// The live-status tree (issue 39): the world's ranks [0, N) form a tree of their own debug
// servers in which rank `lo` answers for the span [lo, hi): it splits [lo+1, hi) into at most
// kLiveTreeFanout contiguous child spans, asks each child's first rank for its span's summary
// (GET /v1/tree/status), and answers its parent with its own status merged with theirs
// (live_summary.h). A query touches O(fanout) servers per level, O(log N) levels, and every
// answer is a summary whose size does not grow with N.
//
// Deadlines: a rank at height h (the levels below it) answers within W(h) of its request, where
// W(0) = 0, W(1) = L and W(h) = W(h-1) + W(h-2) + 2L; L is the per-level allowance the query
// carries (level_ms: the network and one rank's own work). It waits W(h_c) + L for a child of
// height h_c; a child that fails (no answer by then, refused, or not its status) is missing
// and the rank asks that child's children directly (W(h_g) + L each, one level only): a frozen
// rank costs its own status, not its subtree's. Ranks not asked are "not_reached".
// Abandoned asks: a node's asks end by its own W(h) (the deadlines above), and at once when its
// asker closes the connection (TreeQueryOptions::asker_fd): a parent that gave up leaves no
// work behind in its subtree, whose nodes' connections it closes in turn.
// Addresses: a rank answering for its span never reads the store while a query waits. Its
// children's and grandchildren's addresses are read once, in the background, when its server
// starts (TreeAddressResolver: one batched store request, O(N) keys over the whole job); a
// child whose address is not read yet is "not_reached". The querier (collie analyze --live,
// the cluster view) reads what it needs in one batched request (StoreAddresses) before its
// deadlines start. A slow store therefore delays answers, never turns a healthy rank into a
// missing one (issue 40 item 9).
// Thread safety: TreeSpan functions are pure; StoreAddresses and TreeAddressResolver are
// thread-safe; a TreeQuery belongs to one thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/timeout.h"
#include "core/worker_thread.h"
#include "debug_server/http_client.h"
#include "debug_server/live_summary.h"

namespace collie {

class Store;

inline constexpr int kLiveTreeFanout = 16;
// The most a tree answer may be (a summary is far smaller; more is not a summary).
inline constexpr size_t kMaxTreeAnswerBytes = size_t{8} << 20;

struct TreeSpan {
  int lo = 0, hi = 0;  // ranks [lo, hi); rank lo answers for it
  int size() const { return hi - lo; }
  bool operator==(const TreeSpan&) const = default;
};

// [lo+1, hi) split into at most `fanout` contiguous spans, sizes differing by at most one.
std::vector<TreeSpan> tree_children(TreeSpan s, int fanout = kLiveTreeFanout);
// The span rank `rank` answers for in the tree of [0, world). REQUIRES: 0 <= rank < world.
TreeSpan tree_span_of(int rank, int world, int fanout = kLiveTreeFanout);
// Levels below the span's first rank (0 for a single rank).
int tree_height(TreeSpan s, int fanout = kLiveTreeFanout);
// W(h) above.
Millis tree_answer_time(int height, Millis level);

// Where a rank's debug server is, as far as the store said.
struct RankAddress {
  enum class State { kUnknown, kKnown, kNone, kBad };
  State state = State::kUnknown;  // kUnknown: not read yet
  std::string host;               // kKnown
  int port = 0;                   // kKnown
  std::string url;                // kKnown: http://host:port
  std::string why;                // kNone, kBad: what the store held or said
};

// Addresses for a TreeQuery: addresses() is called with the ranks a step needs, all at once.
class AddressSource {
 public:
  virtual ~AddressSource() = default;
  virtual std::vector<RankAddress> addresses(const std::vector<int>& ranks) = 0;
};

// For a rank without a store: every address unknown.
class NoAddresses : public AddressSource {
 public:
  std::vector<RankAddress> addresses(const std::vector<int>& ranks) override {
    RankAddress a;
    a.why = "the rank asked has no store to read its children's addresses from";
    return std::vector<RankAddress>(ranks.size(), a);
  }
};

// Addresses read from the store under debug_server/<rank>, cached: a batch costs one request
// when every key is there (check + multi_get), and O(missing x log(batch)) checks otherwise.
// Blocking (the store's timeout): for queriers, before their deadlines, and for the resolver.
class StoreAddresses : public AddressSource {
 public:
  explicit StoreAddresses(std::shared_ptr<Store> store) : store_(std::move(store)) {}
  std::vector<RankAddress> addresses(const std::vector<int>& ranks) override;
  // Only what is cached; never blocks (kUnknown for the rest).
  std::vector<RankAddress> cached(const std::vector<int>& ranks) const;
  // Reads the ranks not known yet; returns the ranks still without an address.
  std::vector<int> read(const std::vector<int>& ranks);
  // Parks until every key of `ranks` exists or `timeout` passes, then reads them (one request
  // each way). False on the timeout. Throws what the store throws otherwise.
  bool wait_and_read(const std::vector<int>& ranks, Millis timeout);
  Store& store() { return *store_; }

 private:
  void read_present(const std::vector<int>& ranks, std::map<int, RankAddress>& out);
  std::shared_ptr<Store> store_;
  mutable std::mutex mu_;
  std::map<int, RankAddress> cache_;  // guarded by mu_
};

// Reads, in the background, the addresses a rank's tree node needs: its children's and
// grandchildren's (collie-tree-addr; one store request when they are all published, then it
// parks until stop; ranks that have not published are read again as they appear). A query
// answered by this rank reads them from here and never waits for the store.
// A rank that had not published when this node read the store may have published since (the
// node's wait for it wakes only as fast as the store answers): for kUnpublishedGrace after the
// node started, such a rank is "not read yet" (kUnknown: not reached, not blamed); after it,
// "no address" (kNone: a rank that never started its debug server, or died first).
class TreeAddressResolver : public AddressSource {
 public:
  static constexpr Millis kUnpublishedGrace{30000};
  // `store`: a client of its own (a clone), interrupted by stop(). REQUIRES: world > 1.
  // `unpublished_grace`: kUnpublishedGrace but in tests.
  TreeAddressResolver(std::shared_ptr<Store> store, int rank, int world,
                      Millis unpublished_grace = kUnpublishedGrace);
  ~TreeAddressResolver() override;
  std::vector<RankAddress> addresses(const std::vector<int>& ranks) override;
  void stop();
  // The ranks it reads (children, then grandchildren).
  const std::vector<int>& ranks() const { return ranks_; }

 private:
  void body();
  StoreAddresses addrs_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Millis grace_;
  std::vector<int> ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  WorkerThread thread_;
};

struct TreeQueryOptions {
  int world_size = 0;
  Millis level{1000};                         // L above
  std::string token;                          // bearer token for the requests ("" = none)
  std::string token_note;                     // appended to a 401's reason (why no token was sent)
  const std::atomic<bool>* cancel = nullptr;  // the request that started it ended
  // The connection of the request it answers (a node's asker): when that client goes away the
  // node's outstanding asks end at once, "cancelled" (http::GetRequest::cancel_fd). -1: none.
  int asker_fd = -1;
};

// One summary of `span`, event-driven: start() returns the GETs to drive (http::run_all, or a
// caller's own loop), finished() takes each as it ends and returns any it starts in its place.
// With `local` (the summary of span.lo: this process is that rank) it asks span.lo's children;
// without, it asks span.lo itself (a querier), with the same fallback either way.
class TreeQuery {
 public:
  TreeQuery(TreeSpan span, std::optional<LiveSummary> local, AddressSource& addrs,
            TreeQueryOptions opts);
  std::vector<http::Exchange*> start();
  std::vector<http::Exchange*> finished(http::Exchange* x);
  bool done() const { return pending_ == 0 && started_; }
  // The summary of the span (every rank answered or missing). REQUIRES: done().
  LiveSummary take();

 private:
  struct Ask {
    TreeSpan span;
    bool fallback = false;  // on failure, ask span's children
    std::string url;
    std::unique_ptr<http::Exchange> x;
  };
  std::vector<http::Exchange*> ask(const std::vector<TreeSpan>& spans, bool fallback);
  std::vector<http::Exchange*> fail(const Ask& a, const std::string& kind, const std::string& why);
  TreeSpan span_;
  std::optional<LiveSummary> local_;
  AddressSource& addrs_;
  TreeQueryOptions o_;
  LiveSummary result_;
  std::vector<std::unique_ptr<Ask>> asks_;
  int pending_ = 0;
  bool started_ = false;
  int child_levels_ = 0;
};

// Runs a TreeQuery to the end on this thread (http::run_all).
LiveSummary run_tree_query(TreeQuery& q);

// The target of a status request to the first rank of `s`.
std::string tree_status_target(TreeSpan s, int world, Millis level);

}  // namespace collie
