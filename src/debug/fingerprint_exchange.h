#pragma once
// How DETAIL's collective check gets every rank's fingerprint: one small exchange per checked
// collective, in one of two ways.
//
//  - Side group (the default when this build has Gloo): one all_to_all of fixed-size records
//    (Fingerprint::kRecordBytes per peer) on a Gloo group over the same ranks, used for nothing
//    else. Rank to rank, so nothing funnels through the store host; all_to_all splits travel
//    pairwise, so a splits mismatch is reported by the two ranks it involves. When the
//    all_to_all fails (a rank did not come within the timeout, or died), each rank that came
//    publishes its fingerprint in the store and waits, until the timeout has passed since it
//    arrived (and at least a short grace), for the others': the ones still absent are named.
//    A rank whose all_to_all completed does not publish, so when another rank's timeout expires
//    while a late rank is arriving, that rank may name on-time peers too.
//  - Store: each rank publishes its fingerprint and reads everyone's in one pipelined round trip
//    (Store::set_and_gather). The store host returns N values to each of N ranks.
//
// Ownership: shares the side group and the store. Thread safety: one caller at a time (the
// group's submitting thread).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "debug/fingerprint.h"

namespace collie {

class ProcessGroup;
class Store;

class FingerprintExchange {
 public:
  virtual ~FingerprintExchange() = default;
  struct Gathered {
    std::vector<std::optional<Fingerprint>> fps;  // per group rank; nullopt = did not arrive
    int splits_pairs_of = -1;  // check_collective's only_pairs_of (records carry pairs only)
  };
  // Every rank of the group calls this once per checked collective, in the same order.
  virtual Gathered exchange(const Fingerprint& mine, Millis timeout) = 0;
  // Ends the side group (idempotent); nothing for the store.
  virtual void shutdown() {}
};

// REQUIRES: store is the group's (or a namespace of it); rank/size as the group's.
std::unique_ptr<FingerprintExchange> make_store_exchange(std::shared_ptr<Store> store, int rank,
                                                         int size);
// REQUIRES: side has the group's ranks in the same order; store as above.
std::unique_ptr<FingerprintExchange> make_side_group_exchange(std::shared_ptr<ProcessGroup> side,
                                                              std::shared_ptr<Store> store);

// A Gloo group over pg's ranks for the exchange, rendezvousing under `tag` in pg's store; null
// when this build has no Gloo backend. Every rank of pg must call it (it connects the ranks).
// Throws what the backend's creation throws.
std::shared_ptr<ProcessGroup> make_side_group(const ProcessGroup& pg, const std::string& tag);

}  // namespace collie
