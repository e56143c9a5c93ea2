#pragma once
// AgreementTree: the channel DETAIL's ranks agree over (debug/fingerprint_agreement.h). The ranks
// of a group form two binary trees whose roots, ranks 0 and 1, are linked to each other (heap
// order: rank r >= 2 hangs under rank (r - 2) / 2, so r's children are 2r + 2 and 2r + 3).
// allreduce() combines one value of the same size from every rank and hands every rank the
// total: up each tree to its root, across the roots' link, and down again, on the calling thread
// (no progress thread, no queue). Per call a rank receives at most 3 values and sends at most 3
// whatever the group's size, and the total reaches every rank after 2 * depth() + 1 message
// latencies (depth 13 at 16,384 ranks). At 2 ranks it is one exchange between ranks 0 and 1.
//
// Connect: a rank with children (and rank 0, for rank 1) listens on its bind address
// (discovery/bind_address.h, as the Gloo device chooses it) and publishes "<tag>/<rank>" =
// "host port token" in the group store; every other rank reads its parent's key (rank 1: rank
// 0's) and dials it. A connection is kept only when its first frame carries the acceptor's random
// token (which only readers of the group's store know) and a rank the acceptor expects; anything
// else is closed and ignored. A rank makes at most 4 store requests (set, then delete once its
// children are in; wait+get of its parent's key), and afterwards holds at most 3 descriptors: its
// parent (or the other root) and two children; the listening socket is closed.
// allreduce: every rank calls it the same number of times, in the same order, with the same
// size; values go up before anything comes down, so no order of arrival can deadlock.
// Failure: a neighbour that closes its connection gives NetworkError naming it; a value missing
// at the deadline gives TimeoutError naming the neighbour (and the ranks under it). Either closes
// every connection of this rank, so that its neighbours fail at once instead of at their own
// deadlines, and leaves the tree broken: later calls throw BackendError at once.
// Ownership: owns its sockets (closed on destruction). Thread safety: one thread at a time.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/timeout.h"

namespace collie {

class Store;

class AgreementTree {
 public:
  // Connects the tree; every rank of the group must call it with the same tag. `names` (empty,
  // or one per group rank) are the ranks as messages name them (global ranks of a subgroup).
  // REQUIRES: 0 <= rank < size, `store` shared by the group's ranks, `bind_host` a numeric
  // address of this host that the other ranks can reach.
  // Throws TimeoutError / NetworkError naming the ranks not connected within `timeout`.
  static std::unique_ptr<AgreementTree> connect(std::shared_ptr<Store> store,
                                                const std::string& tag, int rank, int size,
                                                const std::string& bind_host, Millis timeout,
                                                std::vector<int> names = {});
  ~AgreementTree();
  AgreementTree(const AgreementTree&) = delete;
  AgreementTree& operator=(const AgreementTree&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool broken() const { return broken_; }
  // Hops from a root to the deepest rank: floor(log2(size + 1)) - 1.
  int depth() const;
  // Connections this rank holds now (0 once closed).
  int descriptors() const;

  // acc = acc (+) other over `len` bytes; must be commutative and associative.
  using Combine = void (*)(uint8_t* acc, const uint8_t* other, size_t len);
  // data holds this rank's value on entry and the group's total on return. scratch: 2 * len
  // bytes the call may overwrite (it allocates nothing itself).
  // Throws as the header says, by `deadline`.
  void allreduce(uint8_t* data, size_t len, uint8_t* scratch, Combine combine,
                 Clock::TimePoint deadline);

  // Closes every connection (idempotent); later calls throw BackendError.
  void close();

  // How long a wait for a value polls the sockets before it sleeps in poll(2), while the waits
  // before it were that short (after a longer one spinning pauses for 1, 2, 4 ... 1024 waits).
  // With a few ranks in step on idle cores the value often comes within microseconds, and
  // sleeping adds a wake-up's latency to the check; on this project's shared 2-core machine
  // spinning measured no faster and twice the CPU (scripts/bench/detail_overhead.sh's DET/spin,
  // scale/detail_agreement.sh SPIN_US), so the default is 0: never spin.
  static constexpr std::chrono::microseconds kDefaultSpin{0};
  void set_spin(std::chrono::nanoseconds spin) { spin_ = spin; }

  // What this rank moved so far (frames and their bytes, headers included), for benchmarks.
  struct Traffic {
    uint64_t frames_sent = 0, bytes_sent = 0, frames_received = 0, bytes_received = 0;
  };
  const Traffic& traffic() const { return traffic_; }

  // The ranks below group rank r (r excluded), ascending; for messages.
  static std::vector<int> below(int r, int size);
  static int parent_of(int r) { return r == 1 ? 0 : (r - 2) / 2; }

  // One pending frame transfer on a link; internal, public for the .cpp's helpers.
  struct Transfer;

 private:
  AgreementTree(int rank, int size, std::vector<int> names);
  void run(Transfer* ts, int n, Clock::TimePoint deadline);
  void advance(Transfer& t);
  void check_frames(Transfer* ts, int n);
  [[noreturn]] void fail_timeout(const Transfer* ts, int n);
  int name(int r) const;
  std::string who(int r) const;  // "rank 5 (and ranks 12-13 under it)"

  const int rank_, size_;
  const std::vector<int> names_;
  int up_fd_ = -1;              // parent, or the other root
  int child_fd_[2] = {-1, -1};  // children 2r+2, 2r+3
  int children_ = 0;
  uint32_t round_ = 0;
  Clock::TimePoint started_{};  // of the current allreduce
  std::chrono::nanoseconds spin_{kDefaultSpin};
  int spin_skip_ = 0;     // waits left that sleep at once
  int spin_backoff_ = 1;  // the next skip after a wait longer than spin_
  bool broken_ = false;
  Traffic traffic_;
};

}  // namespace collie
