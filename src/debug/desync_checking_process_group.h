#pragma once
// DesyncCheckingProcessGroup (COLLIE_DEBUG=DETAIL): checks that every rank makes the same call.
//
// Collectives: before forwarding, the ranks agree that their Fingerprints are equal (see
// debug/fingerprint_agreement.h: a 32-byte summary reduced over a tree of TCP connections on the
// calling thread, O(log N) latencies and O(1) work per rank; the fingerprints themselves go
// through the store only when the summary says they differ), versus torch's barrier + two
// allgathers. Ranks that disagree get a DesyncError grouping ranks by what they called; a rank
// that does not arrive within the op's timeout is named. Nothing is sent on the backend when the
// check fails.
// Send/recv: checked pairwise and off the caller's thread (a blocking check could deadlock legal
// patterns where both peers send first): the k-th send r->q is compared with q's k-th recv from
// r by a checker thread, and the Work handed back completes only when both the backend op and
// the check are done (DesyncError when the peer's call differs or never comes).
// COLLIE_DESYNC_SAMPLE=N checks only ops whose seq (per-pair count for p2p) is a multiple of N.
//
// Ownership: shares the inner group; owns its checker thread (joined on destruction).
// Thread safety: as ProcessGroup (one submitting thread per group).
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/wrapper.h"
#include "core/worker_thread.h"
#include "debug/fingerprint.h"
#include "debug/fingerprint_agreement.h"

namespace collie {

class Env;

class DesyncCheckingProcessGroup : public ProcessGroupWrapper {
 public:
  // `tree` carries the collectives' agreement (make_agreement_tree); null = it goes through the
  // store. `store` carries the p2p checks and the explanations (default: the group's store,
  // info().store); two checkers over one group (a benchmark comparing sampling rates) need stores
  // of their own, since keys name seqs.
  // REQUIRES: store or inner->info().store is set. sample_every >= 1. tree, when set, spans this
  // group's ranks.
  DesyncCheckingProcessGroup(std::shared_ptr<ProcessGroup> inner, uint64_t sample_every = 1,
                             std::shared_ptr<Store> store = nullptr,
                             std::unique_ptr<AgreementTree> tree = nullptr);
  ~DesyncCheckingProcessGroup() override;

  // COLLIE_DESYNC_SAMPLE (default 1); throws InvalidArgument when not a positive integer.
  static uint64_t sample_from_env(const Env& env);

  void shutdown() override;
  const FingerprintAgreement& agreement() const { return agreement_; }

 protected:
  void before(const OpCall& call) override;
  std::shared_ptr<Work> after(const OpCall& call, std::shared_ptr<Work> work) override;

 private:
  struct P2PCheck {
    bool active = false;
    std::string mine;
    std::string theirs;
    int sender = -1;
    int receiver = -1;
    Fingerprint fp;
  };
  void check_collective_call(const OpCall& call);
  void post(std::function<void()> task);
  void loop();
  [[noreturn]] void fail(const OpCall& call, const std::string& msg);

  const std::shared_ptr<Store> store_;
  // The checker thread's own client: its parked waits must not hold up the caller's requests
  // (a TcpStore serializes a connection's requests; a peer's key may depend on this rank's).
  const std::shared_ptr<Store> checker_store_;
  const uint64_t sample_;
  std::vector<uint64_t> sends_;     // per peer: sends so far
  std::vector<uint64_t> recvs_;     // per peer: recvs so far
  FingerprintAgreement agreement_;  // collectives
  P2PCheck p2p_;                    // set by before(), consumed by after()

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  WorkerThread thread_;
};

// The stack's DETAIL layer (src/stack/stack.cpp): `pg` wrapped in a DesyncCheckingProcessGroup
// when the debug level is DETAIL and the group has a store, else `pg` unchanged. The ranks agree
// over an AgreementTree (make_agreement_tree) when it connects, else through the store.
struct BackendArgs;
std::shared_ptr<ProcessGroup> with_desync_checks(std::shared_ptr<ProcessGroup> pg,
                                                 const BackendArgs& args);

}  // namespace collie
