#pragma once
// FileStore: a store backed by one file, usable by processes on one host or on a shared file
// system. Every operation opens the file and takes an flock on it; the file is an append-only
// log of records, replayed incrementally (from the last offset seen) into an in-memory
// HashStore, which also gives FileStore HashStore's exact semantics. Waits poll the file with
// backoff (1 ms doubling to 50 ms) until the deadline.
// num_workers > 0: each instance records its exit when destroyed; the one that brings the count
// to num_workers removes the file. Thread-safe; safe across processes.
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "core/export.h"
#include "store/hash_store.h"
#include "store/store.h"

namespace collie::store_wire {
class Writer;
}

namespace collie {

class COLLIE_API FileStore : public Store {
 public:
  FileStore(std::string path, int num_workers = 0, Millis timeout = kDefaultTimeout);
  ~FileStore() override;

  // Opens the file again (not counted in num_workers).
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
  using Store::set;
  using Store::wait;

  const std::string& path() const { return path_; }

 private:
  class Locked;
  // REQUIRES: mu_ held. Replays the records appended since pos_.
  void sync(Locked& lk);
  void write_record(Locked& lk, store_wire::Writer& w);
  void write_set(Locked& lk, const std::string& key);  // logs cache_'s value of key
  std::vector<Bytes> wait_for(const std::vector<std::string>& keys, Millis timeout, bool fetch);
  void check_live(const std::vector<std::string>& keys) const;  // throws once interrupted

  std::string path_;
  int num_workers_;
  std::mutex mu_;  // guards cache_, pos_, workers_done_
  std::unique_ptr<HashStore> cache_ = std::make_unique<HashStore>();
  off_t pos_ = 0;  // bytes of the log already replayed into cache_
  int workers_done_ = 0;
  std::atomic<bool> interrupted_{false};
  std::mutex wake_mu_;  // with wake_: cuts a wait's sleep short on interrupt()
  std::condition_variable wake_;
};

}  // namespace collie
