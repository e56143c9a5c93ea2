#include "store/hash_store.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"

namespace collie {

int64_t parse_counter(const Bytes& value, const std::string& key) {
  int64_t out = 0;
  const char* b = reinterpret_cast<const char*>(value.data());
  auto [p, ec] = std::from_chars(b, b + value.size(), out);
  if (ec != std::errc() || p != b + value.size()) {
    throw StoreError("store: add on key '" + key + "' whose value is not an integer");
  }
  return out;
}

void HashStore::check_live(const std::vector<std::string>& keys) const {
  if (interrupted_) throw_store_interrupted(keys, "HashStore");
}

void HashStore::interrupt() {
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    interrupted_ = true;
  }
  s_->cv.notify_all();  // the cv is shared with clones: they wake, see nothing new and wait on
}

std::shared_ptr<Store> HashStore::clone() {
  return std::shared_ptr<HashStore>(new HashStore(s_, timeout()));
}

void HashStore::put_locked(const std::string& key, const Bytes& value) {
  auto [it, fresh] = s_->map.try_emplace(key);
  s_->bytes = s_->bytes - (fresh ? 0 : it->second.size()) + (fresh ? key.size() : 0) + value.size();
  it->second = value;
}

bool HashStore::erase_locked(const std::string& key) {
  auto it = s_->map.find(key);
  if (it == s_->map.end()) return false;
  s_->bytes -= key.size() + it->second.size();
  s_->map.erase(it);
  return true;
}

size_t HashStore::stored_bytes() const {
  std::lock_guard<std::mutex> lk(s_->mu);
  return s_->bytes;
}

void HashStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    check_live({key});
    put_locked(key, value);
  }
  s_->cv.notify_all();
}

void HashStore::wait_locked(std::unique_lock<std::mutex>& lk, const std::vector<std::string>& keys,
                            Millis timeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + resolve(timeout);
  check_live(keys);
  auto ready = [&] {
    if (interrupted_) return true;
    for (const auto& k : keys) {
      if (s_->map.find(k) == s_->map.end()) return false;
    }
    return true;
  };
  if (!s_->cv.wait_until(lk, deadline, ready)) {
    throw_store_timeout(
        keys, std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start),
        "HashStore");
  }
  check_live(keys);
}

Bytes HashStore::get(const std::string& key) {
  std::unique_lock<std::mutex> lk(s_->mu);
  wait_locked(lk, {key}, kUseGroupTimeout);
  return s_->map.at(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t v;
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    check_live({key});
    auto it = s_->map.find(key);
    const int64_t old = it == s_->map.end() ? 0 : parse_counter(it->second, key);
    if (__builtin_add_overflow(old, delta, &v)) {
      throw StoreError("add on key '" + key + "': " + std::to_string(old) + " + " +
                       std::to_string(delta) + " overflows a 64-bit counter; value unchanged");
    }
    put_locked(key, to_bytes(std::to_string(v)));
  }
  s_->cv.notify_all();
  return v;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lk(s_->mu);
  check_live(keys);
  for (const auto& k : keys) {
    if (s_->map.find(k) == s_->map.end()) return false;
  }
  return true;
}

void HashStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  std::unique_lock<std::mutex> lk(s_->mu);
  wait_locked(lk, keys, timeout);
}

Bytes HashStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Bytes result;
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    check_live({key});
    auto it = s_->map.find(key);
    if (it == s_->map.end()) {
      if (!expected.empty()) return expected;  // torch semantics: missing key returns expected
      put_locked(key, desired);
      result = desired;
    } else if (it->second == expected) {
      put_locked(key, desired);
      result = desired;
    } else {
      return it->second;
    }
  }
  s_->cv.notify_all();
  return result;
}

bool HashStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> lk(s_->mu);
  check_live({key});
  const bool gather = s_->gathers.erase(key) > 0;
  return erase_locked(key) || gather;
}

Store::GatherResult HashStore::gather(const std::string& name, int member, int members,
                                      const Bytes& value, GatherRead read, Millis timeout) {
  check_gather_args(name, member, members, value.size(), read);
  const auto deadline = std::chrono::steady_clock::now() + resolve(timeout);
  std::unique_lock<std::mutex> lk(s_->mu);
  check_live({name});
  auto& slot = s_->gathers[name];
  if (!slot) {
    slot = std::make_shared<Gather>();
    slot->members = members;
    slot->read = read;
    slot->values.resize(static_cast<size_t>(members));
    slot->have.assign(static_cast<size_t>(members), false);
  }
  std::shared_ptr<Gather> g = slot;  // outlives a delete_key while this member waits
  if (g->members != members || g->read != read) {
    throw InvalidArgument(fmt::format(
        "gather '{}': member {} says {} members (read mode {}), another member said {} (mode {})",
        name, member, members, static_cast<int>(read), g->members, static_cast<int>(g->read)));
  }
  if (g->have[static_cast<size_t>(member)]) {
    throw InvalidArgument(fmt::format(
        "gather '{}': member {} contributed twice (each member calls once per gather name)", name,
        member));
  }
  if (read == GatherRead::kColumn && g->arrived > 0) {
    for (const Bytes& v : g->values) {
      if (!v.empty() && v.size() != value.size()) {
        throw InvalidArgument(fmt::format(
            "gather '{}' (column): member {} has cells of {} bytes, another member of {}", name,
            member, value.size() / static_cast<size_t>(members),
            v.size() / static_cast<size_t>(members)));
      }
    }
  }
  g->values[static_cast<size_t>(member)] = value;
  g->have[static_cast<size_t>(member)] = true;
  if (++g->arrived == g->members) s_->cv.notify_all();
  GatherResult out;
  if (read == GatherRead::kRoot && member != 0) {
    out.complete = true;
    return out;
  }
  s_->cv.wait_until(lk, deadline, [&] { return interrupted_ || g->arrived == g->members; });
  check_live({name});
  if (g->arrived < g->members) {
    for (int m = 0; m < g->members; ++m) {
      if (!g->have[static_cast<size_t>(m)]) out.missing.push_back(m);
    }
    return out;
  }
  out.complete = true;
  if (read == GatherRead::kColumn) {
    out.values = column_of(g->values, member, name);
  } else if (read != GatherRead::kNone) {
    out.values = g->values;
  }
  return out;
}

int64_t HashStore::value_size(const std::string& key) {
  std::lock_guard<std::mutex> lk(s_->mu);
  auto it = s_->map.find(key);
  return it == s_->map.end() ? -1 : static_cast<int64_t>(it->second.size());
}

int64_t HashStore::num_keys() {
  std::lock_guard<std::mutex> lk(s_->mu);
  check_live({});
  return static_cast<int64_t>(s_->map.size());
}

void HashStore::append(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    check_live({key});
    auto [it, fresh] = s_->map.try_emplace(key);
    s_->bytes += (fresh ? key.size() : 0) + value.size();
    it->second.insert(it->second.end(), value.begin(), value.end());
  }
  s_->cv.notify_all();
}

std::vector<Bytes> HashStore::multi_get(const std::vector<std::string>& keys) {
  std::unique_lock<std::mutex> lk(s_->mu);
  wait_locked(lk, keys, kUseGroupTimeout);
  std::vector<Bytes> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(s_->map.at(k));
  return out;
}

void HashStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size()) {
    throw InvalidArgument("multi_set: " + std::to_string(keys.size()) + " keys but " +
                          std::to_string(values.size()) + " values");
  }
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    check_live(keys);
    for (size_t i = 0; i < keys.size(); ++i) put_locked(keys[i], values[i]);
  }
  s_->cv.notify_all();
}

}  // namespace collie
