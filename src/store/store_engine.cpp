#include "store/store_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"

namespace collie::store_server {

using store_wire::Op;
using store_wire::Reader;
using store_wire::Status;
using store_wire::Writer;

namespace {
constexpr size_t kPerKeyOverhead = 64;

std::vector<std::string> read_keys(Reader& r) {
  const uint32_t n = r.u32();
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < n; ++i) keys.push_back(r.str());  // bounded by the frame size
  return keys;
}

// The reply body of a request that carries nothing back (status only).
constexpr std::span<const uint8_t> kEmpty{};
}  // namespace

StoreEngine::StoreEngine(const TcpStoreLimits& limits, ReplySink& sink)
    : lim_(limits), sink_(sink) {}

StoreEngine::~StoreEngine() = default;

size_t StoreEngine::parked(uint64_t conn) const {
  auto it = conn_parked_.find(conn);
  return it == conn_parked_.end() ? 0 : it->second.by_id.size();
}

size_t StoreEngine::parked_bytes(uint64_t conn) const {
  auto it = conn_parked_.find(conn);
  return it == conn_parked_.end() ? 0 : it->second.bytes;
}

std::optional<SteadyClock::time_point> StoreEngine::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

// The store's size once every (key, value size) of `writes` is stored, counted from the map
// (HashStore::stored_bytes, kept by the map itself): a key written twice counts once, with the
// last size, as the write leaves it.
size_t StoreEngine::size_after(const std::vector<std::pair<std::string_view, size_t>>& writes) {
  std::map<std::string_view, size_t> last;
  for (const auto& [key, size] : writes) last[key] = size;
  size_t total = stored_bytes();
  for (const auto& [key, size] : last) {
    const int64_t old = data_.value_size(std::string(key));
    total = total - (old < 0 ? 0 : key.size() + static_cast<size_t>(old)) + key.size() + size;
  }
  return total;
}

// Rejects (and returns false) when a value would be larger than any client can read back, or
// the write would take the store from its size now to `after` past the server's cap (writes
// that do not grow it always pass).
bool StoreEngine::fits(uint64_t conn, uint32_t id, Op op, const std::string& key,
                       size_t value_bytes, size_t after) {
  if (value_bytes > lim_.max_message_bytes) {
    sink_.reject(conn, id,
                 fmt::format("{} on key '{}' would make its value {} bytes, above "
                             "max_message_bytes ({}): no client could read it back",
                             store_wire::op_name(op), key, value_bytes, lim_.max_message_bytes));
    return false;
  }
  if (after > stored_bytes() && after > lim_.max_store_bytes) {
    sink_.reject(conn, id,
                 fmt::format("store is full: {} on key '{}' would raise the stored keys, values "
                             "and gathers to {} bytes, above the server's cap ({})",
                             store_wire::op_name(op), key, after, lim_.max_store_bytes));
    return false;
  }
  return true;
}

void StoreEngine::handle(uint64_t conn, uint32_t id, Op op, Reader& r) {
  switch (op) {
    case Op::kSet:
    case Op::kAdd:
    case Op::kCompareSet:
    case Op::kAppend:
    case Op::kMultiSet:
      return set_like(conn, id, op, r);
    case Op::kGet: {
      std::string key = r.str();
      return wait_or_reply(conn, id, op, {std::move(key)}, r.i64());
    }
    case Op::kWait:
    case Op::kMultiGet: {
      auto keys = read_keys(r);
      return wait_or_reply(conn, id, op, std::move(keys), r.i64());
    }
    case Op::kCheck: {
      Writer w;
      w.u8(data_.check(read_keys(r)) ? 1 : 0);
      return sink_.send(conn, id, Status::kOk, w.body());
    }
    case Op::kDeleteKey: {
      const std::string key = r.str();
      const bool had_key = data_.delete_key(key);
      const bool had_gather = delete_gather(key);
      Writer w;
      w.u8(had_key || had_gather ? 1 : 0);
      return sink_.send(conn, id, Status::kOk, w.body());
    }
    case Op::kNumKeys: {
      Writer w;
      w.i64(data_.num_keys());
      return sink_.send(conn, id, Status::kOk, w.body());
    }
    case Op::kPing:
      return sink_.send(conn, id, Status::kOk, kEmpty);
    case Op::kGather:
      return on_gather(conn, id, r);
    case Op::kAuth:
    case Op::kCancel:
      break;  // the loop handles them
  }
  sink_.reject(conn, id,
               fmt::format("unknown store request op {}; client and server versions differ",
                           static_cast<int>(op)));
}

void StoreEngine::set_like(uint64_t conn, uint32_t id, Op op, Reader& r) {
  switch (op) {
    case Op::kSet: {
      std::string key = r.str();
      Bytes value = r.bytes();
      if (!fits(conn, id, op, key, value.size(), size_after({{key, value.size()}}))) return;
      data_.set(key, value);
      sink_.send(conn, id, Status::kOk, kEmpty);
      return notify(key);
    }
    case Op::kAdd: {
      std::string key = r.str();
      // A counter's decimal text is at most 20 bytes.
      if (!fits(conn, id, op, key, 0, size_after({{key, 20}}))) return;
      const int64_t v = data_.add(key, r.i64());
      Writer w;
      w.i64(v);
      sink_.send(conn, id, Status::kOk, w.body());
      return notify(key);
    }
    case Op::kCompareSet: {
      std::string key = r.str();
      Bytes expected = r.bytes();
      Bytes desired = r.bytes();
      if (!fits(conn, id, op, key, desired.size(), size_after({{key, desired.size()}}))) return;
      Writer w;
      w.bytes(data_.compare_set(key, expected, desired));
      sink_.send(conn, id, Status::kOk, w.body());
      return notify(key);
    }
    case Op::kAppend: {
      std::string key = r.str();
      Bytes value = r.bytes();
      const size_t grown =
          static_cast<size_t>(std::max<int64_t>(data_.value_size(key), 0)) + value.size();
      if (!fits(conn, id, op, key, grown, size_after({{key, grown}}))) return;
      data_.append(key, value);
      sink_.send(conn, id, Status::kOk, kEmpty);
      return notify(key);
    }
    case Op::kMultiSet: {
      auto keys = read_keys(r);
      std::vector<Bytes> values;
      for (size_t i = 0; i < keys.size(); ++i) values.push_back(r.bytes());
      std::vector<std::pair<std::string_view, size_t>> writes;
      size_t largest = 0;
      for (size_t i = 0; i < keys.size(); ++i) {
        writes.emplace_back(keys[i], values[i].size());
        largest = std::max(largest, values[i].size());
      }
      if (!keys.empty() && !fits(conn, id, op, keys[0], largest, size_after(writes))) return;
      data_.multi_set(keys, values);
      sink_.send(conn, id, Status::kOk, kEmpty);
      for (const auto& k : keys) notify(k);
      return;
    }
    default:
      return;
  }
}

StoreEngine::Parked& StoreEngine::park(uint64_t conn, uint32_t id, Op op, int64_t timeout_ms) {
  auto& cp = conn_parked_[conn];
  if (cp.by_id.count(id)) {
    throw StoreError(fmt::format("request id {} is already waiting on this connection", id));
  }
  const auto now = SteadyClock::now();
  const int64_t capped = std::clamp<int64_t>(timeout_ms, 0, int64_t{1} << 40);
  auto p = std::make_unique<Parked>();
  p->conn = conn;
  p->id = id;
  p->op = op;
  p->start = now;
  p->deadline = now + std::chrono::milliseconds(capped);
  const ParkedId pid = next_pid_++;
  p->pid = pid;
  Parked& ref = *p;
  parked_.emplace(pid, std::move(p));
  cp.by_id.emplace(id, pid);
  deadlines_.emplace(ref.deadline, pid);
  return ref;  // counted in parked_now() once the caller has filed it (publish_parked)
}

size_t StoreEngine::link_missing(Parked& p) {
  p.links.assign(p.keys.size(), {});
  p.missing = 0;
  for (uint32_t i = 0; i < p.keys.size(); ++i) {
    if (data_.value_size(p.keys[i]) >= 0) continue;
    WaitList& list = key_waits_[p.keys[i]];
    list.push_back({p.pid, i});
    p.links[i] = {&list, std::prev(list.end())};
    ++p.missing;
  }
  wait_steps_.fetch_add(p.missing, std::memory_order_relaxed);
  return p.missing;
}

void StoreEngine::wait_or_reply(uint64_t conn, uint32_t id, Op op, std::vector<std::string> keys,
                                int64_t timeout_ms) {
  if (data_.check(keys)) return reply_ready(conn, id, op, keys);
  Parked& p = park(conn, id, op, timeout_ms);
  p.keys = std::move(keys);
  p.bytes = kParkedOverhead;
  for (const auto& k : p.keys) p.bytes += k.size() + kPerKeyOverhead;
  conn_parked_[conn].bytes += p.bytes;
  link_missing(p);
  publish_parked();
}

void StoreEngine::publish_parked() {
  // After the request's wait steps: a reader that sees it parked sees what parking it cost.
  parked_now_.store(parked_.size(), std::memory_order_release);
}

void StoreEngine::reply_ready(uint64_t conn, uint32_t id, Op op,
                              const std::vector<std::string>& keys) {
  Writer w;
  if (op == Op::kGet || op == Op::kMultiGet) {
    size_t total = 5;
    for (const auto& k : keys)
      total += 4 + static_cast<size_t>(std::max<int64_t>(0, data_.value_size(k)));
    if (total > lim_.max_message_bytes) {
      const std::string msg = fmt::format(
          "{} reply on {} key(s) would be {} bytes, above max_message_bytes ({}); fetch fewer "
          "keys at a time",
          store_wire::op_name(op), keys.size(), total, lim_.max_message_bytes);
      return sink_.send(conn, id, Status::kError,
                        {reinterpret_cast<const uint8_t*>(msg.data()), msg.size()});
    }
    for (const auto& v : data_.multi_get(keys)) w.bytes(v);
  }
  sink_.send(conn, id, Status::kOk, w.body());
}

void StoreEngine::unlink(Parked& p) {
  for (uint32_t i = 0; i < p.links.size(); ++i) {
    auto& l = p.links[i];
    if (!l.list) continue;
    wait_steps_.fetch_add(1, std::memory_order_relaxed);
    l.list->erase(l.it);
    if (l.list->empty()) key_waits_.erase(p.keys[i]);
    l.list = nullptr;
  }
}

// Forgets a parked request (answered, expired, cancelled or its connection gone).
void StoreEngine::unpark(ParkedId pid) {
  auto it = parked_.find(pid);
  if (it == parked_.end()) return;
  Parked& p = *it->second;
  unlink(p);
  deadlines_.erase({p.deadline, pid});
  auto cp = conn_parked_.find(p.conn);
  if (cp != conn_parked_.end()) {
    cp->second.by_id.erase(p.id);
    cp->second.bytes -= p.bytes;
    if (cp->second.by_id.empty()) conn_parked_.erase(cp);
  }
  parked_.erase(it);
  publish_parked();
}

// `key` now exists: every request parked on it has one key fewer to wait for.
void StoreEngine::notify(const std::string& key) {
  auto it = key_waits_.find(key);
  if (it == key_waits_.end()) return;
  WaitList list = std::move(it->second);
  key_waits_.erase(it);
  std::vector<ParkedId> complete;
  wait_steps_.fetch_add(list.size(), std::memory_order_relaxed);
  for (const KeyWait& w : list) {
    auto pi = parked_.find(w.pid);
    if (pi == parked_.end()) continue;
    Parked& p = *pi->second;
    p.links[w.index].list = nullptr;
    if (--p.missing == 0) complete.push_back(w.pid);
  }
  for (ParkedId pid : complete) ready(pid);
}

// Every key of the parked request arrived at some point: answer it, unless one was deleted
// since (then it waits on the ones missing now).
void StoreEngine::ready(ParkedId pid) {
  auto it = parked_.find(pid);
  if (it == parked_.end()) return;
  Parked& p = *it->second;
  if (link_missing(p) > 0) return;
  const uint64_t conn = p.conn;
  const uint32_t id = p.id;
  const Op op = p.op;
  std::vector<std::string> keys = std::move(p.keys);
  p.keys.clear();
  p.links.clear();
  unpark(pid);
  reply_ready(conn, id, op, keys);
}

void StoreEngine::cancel(uint64_t conn, uint32_t id) {
  auto cp = conn_parked_.find(conn);
  if (cp == conn_parked_.end()) return;
  auto it = cp->second.by_id.find(id);
  if (it == cp->second.by_id.end()) return;
  unpark(it->second);
}

void StoreEngine::drop(uint64_t conn) {
  auto cp = conn_parked_.find(conn);
  if (cp == conn_parked_.end()) return;
  std::vector<ParkedId> pids;
  for (const auto& [id, pid] : cp->second.by_id) pids.push_back(pid);
  for (ParkedId pid : pids) unpark(pid);
}

void StoreEngine::expire(SteadyClock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const ParkedId pid = deadlines_.begin()->second;
    auto it = parked_.find(pid);
    if (it == parked_.end()) {
      deadlines_.erase(deadlines_.begin());
      continue;
    }
    Parked& p = *it->second;
    const uint64_t conn = p.conn;
    const uint32_t id = p.id;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - p.start);
    if (!p.gather.empty()) {
      auto g = gathers_.find(p.gather);
      Bytes body;
      if (g != gathers_.end()) body = missing_body(*g->second);
      unpark(pid);
      sink_.send(conn, id, Status::kOk, body);
      continue;
    }
    unpark(pid);
    Writer w;
    w.i64(waited.count());
    sink_.send(conn, id, Status::kTimeout, w.body());
  }
}

}  // namespace collie::store_server
