#include "debug/desync_checking_process_group.h"

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "comm/registry.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "debug/dump_service.h"
#include "store/store.h"

namespace collie {
namespace {

// The handle given to the caller for send/recv: completes when the backend op has completed
// and the pairwise check has passed (or with the first error of either).
class CheckedWork : public Work {
 public:
  // A little longer than the op, so the check's own error (naming the peer) wins over wait()'s.
  static constexpr Millis kGrace{2000};
  explicit CheckedWork(std::shared_ptr<Work> inner)
      : Work(inner->op(), inner->seq(), inner->timeout() + kGrace), inner_(std::move(inner)) {}
  const std::shared_ptr<Work>& inner() const { return inner_; }

 protected:
  // Backends whose Works advance only when polled (MPI) keep advancing while the caller waits.
  void progress() override { inner_->is_completed(); }
  bool needs_polling() const override { return true; }

 private:
  std::shared_ptr<Work> inner_;
};

bool sampled(uint64_t n, uint64_t every) { return (n - 1) % every == 0; }

}  // namespace

DesyncCheckingProcessGroup::DesyncCheckingProcessGroup(std::shared_ptr<ProcessGroup> inner,
                                                       uint64_t sample_every,
                                                       std::shared_ptr<Store> store,
                                                       std::unique_ptr<AgreementTree> tree)
    : ProcessGroupWrapper(std::move(inner)),
      store_(store ? std::move(store) : info().store),
      checker_store_(store_->clone()),
      sample_(sample_every == 0 ? 1 : sample_every),
      sends_(static_cast<size_t>(size()), 0),
      recvs_(static_cast<size_t>(size()), 0),
      agreement_(store_, rank(), size(), info().global_ranks, std::move(tree)) {
  thread_.start(
      "collie-detail", [this] { loop(); }, set_and_notify(mu_, stop_, cv_));
}

DesyncCheckingProcessGroup::~DesyncCheckingProcessGroup() { thread_.stop(); }

uint64_t DesyncCheckingProcessGroup::sample_from_env(const Env& env) {
  const auto v = env.get_int_in("COLLIE_DESYNC_SAMPLE", 1, std::numeric_limits<long long>::max(),
                                " (check every N-th op; 1 = every op)");
  return v ? static_cast<uint64_t>(*v) : 1;
}

// The mismatch reaches the user once per rank, as the DesyncError the call throws; the dump
// records it and its log line only says where the dump went.
void DesyncCheckingProcessGroup::fail(const OpCall& call, const std::string& msg) {
  const std::string text = fmt::format("[Rank {}] {}", info().global_ranks[rank()], msg);
  DumpService::global().request_dump(
      fmt::format("desync at {} #{} in group {}", op_name(call.type), call.seq, info().name),
      /*all_ranks=*/true, msg);
  throw DesyncError(text);
}

void DesyncCheckingProcessGroup::before(const OpCall& call) {
  p2p_.active = false;
  if (!is_p2p(call.type)) {
    if (sampled(call.seq, sample_)) check_collective_call(call);
    return;
  }
  const int me = rank();
  const bool send = call.type == OpType::Send;
  const uint64_t k = ++(send ? sends_ : recvs_)[call.peer];
  if (!sampled(k, sample_)) return;
  p2p_.active = true;
  p2p_.sender = send ? me : call.peer;
  p2p_.receiver = send ? call.peer : me;
  const std::string base = fmt::format("desync/p/{}-{}/{}", p2p_.sender, p2p_.receiver, k);
  p2p_.mine = base + (send ? "/s" : "/r");
  p2p_.theirs = base + (send ? "/r" : "/s");
  p2p_.fp = Fingerprint::of(call, info().global_ranks[me], size());
  store_->set(p2p_.mine, p2p_.fp.encode());
}

void DesyncCheckingProcessGroup::check_collective_call(const OpCall& call) {
  // Not copying the splits keeps the check free of allocations; the agreement reads them here.
  const Fingerprint mine =
      Fingerprint::of(call, info().global_ranks[rank()], size(), /*copy_splits=*/false);
  if (auto msg = agreement_.check(mine, call.input_splits, call.output_splits, call.timeout)) {
    fail(call, *msg);
  }
}

void DesyncCheckingProcessGroup::shutdown() {
  agreement_.shutdown();
  ProcessGroupWrapper::shutdown();
}

std::shared_ptr<Work> DesyncCheckingProcessGroup::after(const OpCall& call,
                                                        std::shared_ptr<Work> work) {
  if (!p2p_.active) return work;
  p2p_.active = false;
  auto checked = std::make_shared<CheckedWork>(work);
  P2PCheck c = p2p_;
  const Millis timeout = call.timeout;
  const std::string where = fmt::format("[Rank {}]", info().global_ranks[rank()]);
  post([this, c, checked, timeout, where] {
    std::optional<Fingerprint> theirs;
    try {
      checker_store_->wait({c.theirs}, timeout);
      theirs = Fingerprint::decode(checker_store_->get(c.theirs));
      checker_store_->delete_key(c.theirs);
    } catch (const StoreError&) {
    } catch (const std::exception& e) {
      checked->complete(std::make_exception_ptr(e));
      return;
    }
    const bool sent = c.fp.op == OpType::Send;
    const auto& send = sent ? std::optional<Fingerprint>(c.fp) : theirs;
    const auto& recv = sent ? theirs : std::optional<Fingerprint>(c.fp);
    const int s = info().global_ranks[c.sender], r = info().global_ranks[c.receiver];
    if (auto msg = check_p2p(send, recv, s, r, timeout)) {
      DumpService::global().request_dump(
          fmt::format("desync between send and recv of ranks {} and {}", s, r),
          /*all_ranks=*/true, *msg);
      checked->complete(std::make_exception_ptr(DesyncError(fmt::format("{} {}", where, *msg))));
      return;
    }
    std::weak_ptr<CheckedWork> weak = checked;
    checked->inner()->on_complete([weak](Work& w) {
      if (auto p = weak.lock()) p->complete(w.exception());
    });
  });
  return checked;
}

void DesyncCheckingProcessGroup::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void DesyncCheckingProcessGroup::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stop_ and drained: pending checks still complete their Works
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lk.unlock();
    try {
      task();
    } catch (const std::exception& e) {
      log(LogLevel::Warning, "desync checker: {}", e.what());
    }
    lk.lock();
  }
}

std::shared_ptr<ProcessGroup> with_desync_checks(std::shared_ptr<ProcessGroup> pg,
                                                 const BackendArgs& args) {
  if (debug_level() != DebugLevel::Detail || !pg->info().store) return pg;
  const Env& env = args.env ? *args.env : Env::process();
  const uint64_t sample = DesyncCheckingProcessGroup::sample_from_env(env);
  std::unique_ptr<AgreementTree> tree;
  try {
    tree = make_agreement_tree(*pg, "desync_tree", env);
  } catch (const std::exception& e) {
    log(LogLevel::Warning, "DETAIL: no agreement tree ({}); checking through the store", e.what());
  }
  return std::make_shared<DesyncCheckingProcessGroup>(std::move(pg), sample, nullptr,
                                                      std::move(tree));
}

}  // namespace collie
