#pragma once
// FingerprintAgreement: how DETAIL's ranks find out, before each checked collective runs, whether
// they all made the same call, and when not, what differs. Agree first, explain on disagreement:
//  - Agree: every rank reduces a 32-byte summary of its fingerprint (debug/agreement_math.h: the
//    min and max of a hash of the fields that must match, a checksum of the all_to_all splits
//    pairs) over an AgreementTree (debug/agreement_tree.h) on the calling thread: 2 * depth + 1
//    message latencies, at most 3 sends and 3 receives of 48 bytes per rank whatever the group's
//    size, no allocation, no store request.
//  - Explain, only when the summary says the calls differ: every rank leaves its fingerprint in
//    the store and joins one gather; rank 0 reads them (one request), words the DesyncError text
//    as check_collective does (ranks grouped by call, differing fields, missing ranks) and
//    publishes it; every rank reads that text, so all of them fail with the same one. For an
//    all_to_all whose pairs disagree, one more reduction over the tree (2N sums) first names the
//    senders and receivers that differ, and the fingerprints carry only their amounts (the
//    first 32 of each are listed).
//  - Failure: when the tree fails (a value did not come before the deadline, a connection
//    closed), the ranks that came go the same way through the store; rank 0's gather waits
//    until the timeout has passed since it arrived (at least a short grace) and names the ranks
//    that did not come (one request). The tree is then broken (its connections closed, so the
//    neighbours learn of it at once) and later checks go through the store: O(1) requests per
//    rank and O(N) work at the store per check. Without a tree (it could not connect) every
//    check goes that way; all_to_all pairs are then listed up to 64 ranks, above that the
//    checksum only says that some pair differs.
//  - A rank that waits for rank 0's text in vain writes its own in its place (compare_set), so a
//    rank 0 that never comes, or comes late, is named and every rank reads one text.
// Ownership: owns the tree, shares the store. Thread safety: one caller at a time (the group's
// submitting thread).
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/timeout.h"
#include "debug/agreement_tree.h"
#include "debug/fingerprint.h"

namespace collie {

class Env;
class ProcessGroup;
class Store;

class FingerprintAgreement {
 public:
  // REQUIRES: `store` is the group's (or one namespace of it every rank uses); 0 <= rank < size;
  // global_ranks empty or one per group rank (how messages name ranks); `tree`, when set, spans
  // the group. tree = null: every check goes through the store.
  FingerprintAgreement(std::shared_ptr<Store> store, int rank, int size,
                       std::vector<int> global_ranks, std::unique_ptr<AgreementTree> tree);
  ~FingerprintAgreement();
  FingerprintAgreement(const FingerprintAgreement&) = delete;
  FingerprintAgreement& operator=(const FingerprintAgreement&) = delete;

  // Every rank of the group calls this once per checked collective, in the same order. `mine`
  // from Fingerprint::of (its splits need not be copied); `in`/`out` are the call's all_to_all
  // splits (empty when it has none). Returns the DesyncError text (without the "[Rank r]"
  // prefix), or nullopt when every rank made the same call.
  std::optional<std::string> check(const Fingerprint& mine, std::span<const int64_t> in,
                                   std::span<const int64_t> out, Millis timeout);

  // Closes the tree (idempotent).
  void shutdown();
  // Null when the checks go through the store.
  const AgreementTree* tree() const { return tree_.get(); }

  // The senders and receivers of the all_to_all pairs that differ (first kListed of each).
  struct Located {
    std::vector<int> senders, receivers;  // group ranks, ascending
    size_t all_senders = 0, all_receivers = 0;
  };
  static constexpr size_t kListed = 32;
  // All of a rank's amounts travel through the store up to this many ranks.
  static constexpr int kFullSplitsRanks = 64;

 private:
  std::optional<std::string> through_store(const Fingerprint& mine, std::span<const int64_t> in,
                                           std::span<const int64_t> out, Millis timeout,
                                           Clock::TimePoint start, const Located* located,
                                           const std::string& tree_error);
  Located locate(const Fingerprint& mine, std::span<const int64_t> in, std::span<const int64_t> out,
                 Clock::TimePoint deadline);
  std::optional<std::string> explain(const std::vector<Bytes>& records,
                                     const std::vector<int>& missing, Millis timeout,
                                     const Located* located) const;
  int global(int r) const;

  const std::shared_ptr<Store> store_;
  const int rank_, size_;
  const std::vector<int> global_ranks_;
  std::unique_ptr<AgreementTree> tree_;
  uint64_t count_ = 0;        // checks so far: the same on every rank
  std::string prev_record_;   // this rank's record key of its last store check
  std::string prev_verdict_;  // rank 0: the verdict key of its last store check
};

// A tree over pg's ranks for the agreement, rendezvousing under `tag` in pg's store and bound
// where the Gloo device would bind (discovery/bind_address.h, from `env`), with pg's timeout.
// Every rank of pg must call it (it connects the ranks). Throws what AgreementTree::connect
// throws.
std::unique_ptr<AgreementTree> make_agreement_tree(const ProcessGroup& pg, const std::string& tag,
                                                   const Env& env);

}  // namespace collie
