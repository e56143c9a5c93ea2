#pragma once
// How DETAIL's collective check gets every rank's fingerprint: one small exchange per checked
// collective, in one of two ways.
//
//  - Mesh (the default): fixed-size records (Fingerprint::kRecordBytes per peer) over a
//    RecordMesh (debug/record_mesh.h), a TCP mesh used for nothing else, on the calling thread:
//    one send per peer and a read of each peer's record, about one message latency. Rank to rank,
//    so nothing funnels through the store host; all_to_all splits travel pairwise, so a splits
//    mismatch is reported by the two ranks it involves. When the exchange fails (a rank did not
//    come within the timeout, or died), each rank that came publishes its fingerprint in the
//    store and waits, until the timeout has passed since it arrived (and at least a short grace),
//    for the others': the ones still absent are named. That rank's mesh is then broken, and its
//    later checks go through the store. A rank whose exchange completed does not publish, so when
//    another rank's timeout expires while a late rank is arriving, that rank may name on-time
//    peers too.
//  - Store: each rank publishes its fingerprint and reads everyone's in one pipelined round trip
//    (Store::set_and_gather). The store host returns N values to each of N ranks.
//
// Ownership: owns the mesh, shares the store. Thread safety: one caller at a time (the
// group's submitting thread).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "debug/fingerprint.h"

namespace collie {

class Env;
class ProcessGroup;
class RecordMesh;
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
  // Closes the mesh (idempotent); nothing for the store.
  virtual void shutdown() {}
};

// What rank `me` of `n` learnt from a records exchange: `records` holds n records of
// Fingerprint::kRecordBytes, peer r's record for `me` at index r (index me is ignored: `mine`).
FingerprintExchange::Gathered gathered_from_records(const Fingerprint& mine, const uint8_t* records,
                                                    int n, int me);

// REQUIRES: store is the group's (or a namespace of it); rank/size as the group's.
std::unique_ptr<FingerprintExchange> make_store_exchange(std::shared_ptr<Store> store, int rank,
                                                         int size);
// REQUIRES: mesh connects the group's ranks, with Fingerprint::kRecordBytes records; store as
// above.
std::unique_ptr<FingerprintExchange> make_mesh_exchange(std::unique_ptr<RecordMesh> mesh,
                                                        std::shared_ptr<Store> store);

// A RecordMesh over pg's ranks for the exchange, rendezvousing under `tag` in pg's store and
// bound where the Gloo device would bind (discovery/bind_address.h, from `env`), with pg's timeout.
// Every rank of pg must call it (it connects the ranks). Throws what RecordMesh::connect throws.
std::unique_ptr<RecordMesh> make_fingerprint_mesh(const ProcessGroup& pg, const std::string& tag,
                                                  const Env& env);

}  // namespace collie
