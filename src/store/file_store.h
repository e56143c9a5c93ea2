#pragma once
// FileStore: a store backed by one file, usable by processes on one host or on a shared file
// system. Every operation takes an flock on the file; the file is an append-only log of
// records, replayed to rebuild the map (as torch's FileStore). Waits poll with backoff.
// num_workers > 0: the last of that many FileStore instances to be destroyed removes the file.
// Thread-safe.
#include <map>
#include <mutex>
#include <string>

#include "store/store.h"

namespace collie {

class FileStore : public Store {
 public:
  FileStore(std::string path, int num_workers = 0, Millis timeout = kDefaultTimeout);
  ~FileStore() override;

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
  using Store::set;
  using Store::wait;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int num_workers_;
  std::mutex mu_;
  std::map<std::string, Bytes> cache_;
  long long pos_ = 0;  // bytes of the log already replayed into cache_
};

}  // namespace collie
