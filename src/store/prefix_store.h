#pragma once
// PrefixStore: namespaces every key of an underlying store as "<prefix>/<key>" (subgroups,
// per-module keys). Shares ownership of the underlying store. Thread-safe if it is.
// num_keys() reports the underlying store's total (as torch's PrefixStore does).
#include <memory>

#include "core/export.h"
#include "store/store.h"

namespace collie {

class COLLIE_API PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);

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
  bool members_only() const override { return base_->members_only(); }
  std::vector<Bytes> set_and_gather(const std::string& drop, const std::string& key,
                                    const Bytes& value, const std::vector<std::string>& gather,
                                    Millis timeout) override;
  GatherResult gather(const std::string& name, int member, int members, const Bytes& value,
                      GatherRead read, Millis timeout) override;
  using Store::set;
  using Store::wait;

  const std::shared_ptr<Store>& base() const { return base_; }

 private:
  std::string k(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> ks(const std::vector<std::string>& keys) const;
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace collie
