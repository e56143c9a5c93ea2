#pragma once
// HashStore: in-process store (a map under a mutex + condition variable). For ranks running as
// threads of one process (unit tests) and as the backing map of the TcpStore server.
// Thread-safe.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "core/export.h"
#include "store/store.h"

namespace collie {

class COLLIE_API HashStore : public Store {
 public:
  explicit HashStore(Millis timeout = kDefaultTimeout)
      : Store(timeout), s_(std::make_shared<State>()) {}

  // Another handle on the same map (waits here never block other callers anyway).
  std::shared_ptr<Store> clone() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void interrupt() override;
  // Native: the values live beside the map (not as keys); delete_key(name) forgets a gather.
  GatherResult gather(const std::string& name, int member, int members, const Bytes& value,
                      GatherRead read, Millis timeout) override;
  bool members_only() const override { return true; }  // in this process only
  using Store::set;
  using Store::wait;

  // The size of key's value, or -1 when the key is missing; never waits.
  int64_t value_size(const std::string& key);
  // Bytes of every key plus its value now in the map (what a size cap counts); kept by each
  // write itself, so it cannot drift from the map's contents. Never waits.
  size_t stored_bytes() const;

 private:
  void wait_locked(std::unique_lock<std::mutex>& lk, const std::vector<std::string>& keys,
                   Millis timeout);
  struct Gather {
    int members = 0;
    GatherRead read = GatherRead::kAll;
    std::vector<Bytes> values;
    std::vector<bool> have;
    int arrived = 0;
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::string, Bytes> map;
    size_t bytes = 0;  // sum of key + value sizes in map
    std::map<std::string, std::shared_ptr<Gather>> gathers;
  };
  HashStore(std::shared_ptr<State> s, Millis timeout) : Store(timeout), s_(std::move(s)) {}
  // Throws when this handle was interrupted. REQUIRES: s_->mu held.
  void check_live(const std::vector<std::string>& keys) const;
  // The only ways the map changes, so State::bytes follows it. REQUIRES: s_->mu held.
  void put_locked(const std::string& key, const Bytes& value);
  bool erase_locked(const std::string& key);
  std::shared_ptr<State> s_;  // shared with clones
  bool interrupted_ = false;  // this handle's alone; guarded by s_->mu
};

// Integer values are stored as decimal text (as torch's stores do), shared by all stores.
COLLIE_API int64_t parse_counter(const Bytes& value, const std::string& key);

}  // namespace collie
