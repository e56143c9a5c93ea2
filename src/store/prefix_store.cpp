#include "store/prefix_store.h"

namespace collie {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> base)
    : Store(base->timeout()), prefix_(std::move(prefix)), base_(std::move(base)) {}

std::vector<std::string> PrefixStore::ks(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(k(key));
  return out;
}

std::shared_ptr<Store> PrefixStore::clone() {
  auto c = std::make_shared<PrefixStore>(prefix_, base_->clone());
  c->set_timeout(timeout());
  return c;
}

void PrefixStore::set(const std::string& key, const Bytes& value) { base_->set(k(key), value); }
// get/multi_get wait with the base store's timeout; a separate wait (one more round trip) is
// needed only when this view's timeout was changed.
Bytes PrefixStore::get(const std::string& key) {
  if (timeout() != base_->timeout()) base_->wait({k(key)}, timeout());
  return base_->get(k(key));
}
int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return base_->add(k(key), delta);
}
void PrefixStore::interrupt() { base_->interrupt(); }
bool PrefixStore::check(const std::vector<std::string>& keys) { return base_->check(ks(keys)); }
void PrefixStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  base_->wait(ks(keys), resolve(timeout));
}
Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected,
                               const Bytes& desired) {
  return base_->compare_set(k(key), expected, desired);
}
bool PrefixStore::delete_key(const std::string& key) { return base_->delete_key(k(key)); }
int64_t PrefixStore::num_keys() { return base_->num_keys(); }
void PrefixStore::append(const std::string& key, const Bytes& value) {
  base_->append(k(key), value);
}
std::vector<Bytes> PrefixStore::multi_get(const std::vector<std::string>& keys) {
  auto full = ks(keys);
  if (timeout() != base_->timeout()) base_->wait(full, timeout());
  return base_->multi_get(full);
}
void PrefixStore::multi_set(const std::vector<std::string>& keys,
                            const std::vector<Bytes>& values) {
  base_->multi_set(ks(keys), values);
}

std::vector<Bytes> PrefixStore::set_and_gather(const std::string& drop, const std::string& key,
                                               const Bytes& value,
                                               const std::vector<std::string>& gather,
                                               Millis timeout) {
  return base_->set_and_gather(drop.empty() ? drop : k(drop), k(key), value, ks(gather),
                               resolve(timeout));
}

Store::GatherResult PrefixStore::gather(const std::string& name, int member, int members,
                                        const Bytes& value, GatherRead read, Millis timeout) {
  return base_->gather(k(name), member, members, value, read, resolve(timeout));
}

}  // namespace collie
