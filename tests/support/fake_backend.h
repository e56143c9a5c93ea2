#pragma once
// A backend for unit tests of wrappers: every op "runs" at once (or is held until the test
// completes it), so wrappers can be tested with ranks as threads over a HashStore. Registered as
// the backend "fake" (test_backends.h), so run_ranks runs on it: {.backend = "fake", ...}.
#include <memory>
#include <mutex>
#include <vector>

#include "comm/process_group.h"
#include "store/hash_store.h"
#include "store/prefix_store.h"

namespace collie::testing {

inline Capabilities all_capabilities() {
  Capabilities c;
  c.backend = "fake";
  for (auto& o : c.ops) o = OpCapability{true, false, kAllDTypeBits, kAllReduceOpBits};
  return c;
}

class FakeBackend : public ProcessGroup {
 public:
  explicit FakeBackend(GroupInfo info, bool hold = false)
      : ProcessGroup(std::move(info)), caps_(all_capabilities()), hold_(hold) {}
  const Capabilities& capabilities() const override { return caps_; }
  std::vector<std::shared_ptr<Work>> held() {
    std::lock_guard<std::mutex> lk(mu_);
    return held_;
  }
  int runs() const { return runs_; }

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override {
    ++runs_;
    auto w = std::make_shared<Work>(call.type, call.seq, call.timeout);
    if (hold_) {
      std::lock_guard<std::mutex> lk(mu_);
      held_.push_back(w);
    } else {
      w->complete();
    }
    return w;
  }

 private:
  Capabilities caps_;
  bool hold_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Work>> held_;
  int runs_ = 0;
};

inline GroupInfo fake_info(int rank, int size, std::shared_ptr<Store> root, Millis timeout,
                           std::string name = "0") {
  GroupInfo i;
  i.backend = "fake";
  i.name = name;
  i.desc = name == "0" ? "default_pg" : "sub";
  i.rank = rank;
  i.size = size;
  i.timeout = timeout;
  i.store = std::make_shared<PrefixStore>("pg/" + name, std::move(root));
  return i;
}

}  // namespace collie::testing
