#include "store/tcp_store_server.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/deadline.h"
#include "core/error.h"
#include "core/log.h"
#include "core/worker_thread.h"
#include "store/hash_store.h"
#include "store/socket_util.h"
#include "store/store_secret.h"
#include "store/tcp_store_protocol.h"

namespace collie {

using store_wire::Op;
using store_wire::Reader;
using store_wire::Status;
using store_wire::Writer;
using SteadyClock = std::chrono::steady_clock;

namespace {
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
// How long a connection whose request was rejected may keep sending before it is cut off; the
// grace lets the client read the error instead of a connection reset.
constexpr auto kDiscardGrace = std::chrono::seconds(2);
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Before authentication a frame can only be an AUTH: op byte + length + secret.
constexpr size_t kMaxAuthFrame = kMaxStoreSecretBytes + 16;
// Requests are not processed while this much reply data is unsent (the client is not reading);
// its input then piles up to the connection cap.
constexpr size_t kOutHighWater = 1u << 20;
// Empty buffers keep at most this much capacity.
constexpr size_t kKeepCapacity = 256u << 10;

int64_t ms(std::chrono::milliseconds d) { return d.count(); }
}  // namespace

class TcpStoreServer::Loop {
 public:
  Loop(int listen_fd, const TcpStoreLimits& limits, std::string secret)
      : listen_fd_(listen_fd), lim_(limits), secret_(std::move(secret)) {
    max_ = lim_.max_message_bytes;
    conn_cap_ = lim_.max_connection_bytes ? lim_.max_connection_bytes : max_ + (1u << 20);
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epfd_ < 0 || wake_fd_ < 0) {
      throw NetworkError(fmt::format("store server: epoll/eventfd: {}", std::strerror(errno)));
    }
    watch(listen_fd_, kListenId, EPOLLIN, EPOLL_CTL_ADD);
    watch(wake_fd_, kWakeId, EPOLLIN, EPOLL_CTL_ADD);
  }
  ~Loop() {
    thread_.stop();  // before the descriptors it serves are closed
    for (auto& [id, c] : conns_) close(c->fd);
    close(listen_fd_);
    close(wake_fd_);
    close(epfd_);
  }

  // Thread-safe: HashStore locks.
  size_t stored_bytes() const { return data_.stored_bytes(); }

  // Starts the event loop on its own thread (collie-store); the destructor stops and joins it.
  void start() {
    thread_.start(
        "collie-store", [this] { run(); }, [this] { wake(); });
  }

  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  }

  void run() {
    epoll_event events[256];
    while (!stopping_) {
      const int n = epoll_wait(epfd_, events, 256, next_timeout_ms());
      if (n < 0 && errno != EINTR) {
        log(LogLevel::Error, "store server: epoll_wait failed: {}", std::strerror(errno));
        return;
      }
      for (int i = 0; i < n; ++i) dispatch(events[i]);
      expire();
      for (uint64_t id : to_close_) close_conn(id);
      to_close_.clear();
    }
  }

 private:
  struct Parked {
    Op op;
    std::vector<std::string> keys;
    SteadyClock::time_point start, deadline;
  };
  struct Conn {
    int fd = -1;
    uint64_t id = 0;
    Bytes in;
    size_t in_off = 0;
    Bytes out;
    size_t out_off = 0;
    bool want_out = false;
    bool close_after_write = false;
    bool discarding = false;
    bool dead = false;
    bool authed = false;
    bool busy = false;
    bool reading = true;      // EPOLLIN watched
    size_t discard_left = 0;  // after a rejection: bytes still read and dropped  // inside
                              // process(): replies sent from handle() must not re-enter it
    size_t held = 0;          // bytes counted in held_total_
    std::optional<Parked> parked;
    SteadyClock::time_point accepted, partial_since, last_activity, reject_deadline;
    std::optional<SteadyClock::time_point> timer;  // entry in timers_
  };

  static size_t unconsumed(const Conn& c) { return c.in.size() - c.in_off; }
  static size_t unsent(const Conn& c) { return c.out.size() - c.out_off; }

  void watch(int fd, uint64_t id, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    epoll_ctl(epfd_, op, fd, &ev);
  }

  int next_timeout_ms() const {
    std::optional<SteadyClock::time_point> next;
    if (!deadlines_.empty()) next = deadlines_.begin()->first;
    if (!timers_.empty() && (!next || timers_.begin()->first < *next)) {
      next = timers_.begin()->first;
    }
    if (accept_paused_ && (!next || accept_resume_ < *next)) next = accept_resume_;
    return next ? poll_timeout_ms(*next) : -1;
  }

  void dispatch(const epoll_event& ev) {
    const uint64_t id = ev.data.u64;
    if (id == kListenId) return accept_all();
    if (id == kWakeId) {
      stopping_ = true;
      return;
    }
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = *it->second;
    if (ev.events & EPOLLIN) on_readable(c);
    if ((ev.events & EPOLLOUT) && !c.dead) flush(c);
    if ((ev.events & (EPOLLERR | EPOLLHUP)) && !(ev.events & EPOLLIN)) mark_dead(c);
    settle(c);
  }

  void accept_all() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: stop accepting for a moment instead of spinning; pending
          // clients stay queued in the backlog.
          log(LogLevel::Warning, "store server: accept: {} ({} clients); raise `ulimit -n`",
              std::strerror(errno), conns_.size());
          epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
          accept_paused_ = true;
          accept_resume_ = SteadyClock::now() + kAcceptPause;
        }
        return;
      }
      net::set_nodelay(fd);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->id = next_id_++;
      c->authed = secret_.empty();
      c->accepted = c->last_activity = SteadyClock::now();
      watch(fd, c->id, EPOLLIN, EPOLL_CTL_ADD);
      Conn& ref = *c;
      conns_.emplace(c->id, std::move(c));
      settle(ref);
    }
  }

  void on_readable(Conn& c) {
    uint8_t buf[64 * 1024];
    // At most 4 MiB per wake-up, so one fast sender cannot monopolize the loop (epoll is
    // level-triggered: the rest is read on the next round).
    for (int round = 0; round < 64; ++round) {
      const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        if (c.discarding || c.close_after_write) {
          // Let a client finish sending the request that was refused (so it reads our error
          // rather than a reset), but not stream forever: past the budget, stop reading.
          if (c.discard_left <= static_cast<size_t>(n)) return stop_reading(c);
          c.discard_left -= static_cast<size_t>(n);
          continue;
        }
        const auto now = SteadyClock::now();
        if (unconsumed(c) == 0) c.partial_since = now;
        c.last_activity = now;
        reserve_for_frame(c, static_cast<size_t>(n));
        c.in.insert(c.in.end(), buf, buf + n);
        process(c);
        if (over_caps(c)) return;
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        mark_dead(c);
        return;
      }
      if (errno != EINTR) break;
    }
  }

  // Grows the input buffer to exactly the frame being received, so a 64 MiB request does not
  // leave a 128 MiB buffer behind.
  static void reserve_for_frame(Conn& c, size_t n) {
    size_t want = c.in.size() + n;
    if (unconsumed(c) >= store_wire::kHeaderBytes) {
      const size_t frame =
          store_wire::kHeaderBytes + store_wire::decode_u32(c.in.data() + c.in_off);
      want = std::max(want, c.in_off + frame);
    }
    if (want > c.in.capacity() && want > 2 * c.in.capacity()) c.in.reserve(want);
  }

  // Checks the memory caps after new input or output; rejects the connection on a violation.
  bool over_caps(Conn& c) {
    account(c);
    if (c.close_after_write || c.discarding || c.dead) return c.dead;
    const size_t held = unconsumed(c) + unsent(c);
    if (held > conn_cap_) {
      reject(c,
             fmt::format("store client holds {} bytes of unprocessed requests and unread replies, "
                         "above the per-connection cap ({}); a client must read each reply before "
                         "sending more (a waiting GET blocks its connection)",
                         held, conn_cap_));
      return true;
    }
    if (held_total_ > lim_.max_total_buffered_bytes) {
      reject(c, fmt::format("store server buffers {} bytes for its clients, above its cap ({}); "
                            "this client was cut off",
                            held_total_, lim_.max_total_buffered_bytes));
      return true;
    }
    return false;
  }

  void account(Conn& c) {
    const size_t now_held = c.dead ? 0 : c.in.capacity() + c.out.capacity();
    held_total_ = held_total_ - c.held + now_held;
    c.held = now_held;
  }

  void process(Conn& c) {
    if (c.busy) return;
    c.busy = true;
    while (!c.parked && !c.close_after_write && !c.discarding && !c.dead &&
           unsent(c) < kOutHighWater) {
      const size_t avail = unconsumed(c);
      if (avail < store_wire::kHeaderBytes) break;
      const uint32_t len = store_wire::decode_u32(c.in.data() + c.in_off);
      if (!c.authed && len > kMaxAuthFrame) {
        reject(c, fmt::format("store authentication failed: this store requires "
                              "COLLIE_STORE_SECRET and the client's first request ({} bytes) is "
                              "not an authentication; set the job's secret on every rank",
                              len));
        break;
      }
      if (len > max_) {
        reject(c, fmt::format("request of {} bytes exceeds the store server's max_message_bytes "
                              "({}); store smaller values or raise max_message_bytes on the "
                              "server",
                              len, max_));
        break;
      }
      if (avail < store_wire::kHeaderBytes + len) break;
      Reader r(c.in.data() + c.in_off + store_wire::kHeaderBytes, len);
      c.in_off += store_wire::kHeaderBytes + len;
      c.partial_since = SteadyClock::now();
      try {
        handle(c, r);
      } catch (const InvalidArgument& e) {
        reply_error(c, e.what());
      } catch (const StoreError& e) {
        reply_error(c, e.what());
      }
    }
    if (c.in_off == c.in.size()) {
      c.in.clear();
      c.in_off = 0;
      if (c.in.capacity() > kKeepCapacity) Bytes().swap(c.in);
    } else if (c.in_off > (1u << 20)) {
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_off));
      c.in_off = 0;
    }
    c.busy = false;
    account(c);
  }

  static std::vector<std::string> read_keys(Reader& r) {
    const uint32_t n = r.u32();
    std::vector<std::string> keys;
    for (uint32_t i = 0; i < n; ++i) keys.push_back(r.str());  // bounded by the frame size
    return keys;
  }

  // The store's size once every (key, value size) of `writes` is stored, counted from the map
  // (HashStore::stored_bytes, kept by the map itself): a key written twice counts once, with
  // the last size, as the write leaves it.
  size_t size_after(const std::vector<std::pair<std::string_view, size_t>>& writes) {
    std::map<std::string_view, size_t> last;
    for (const auto& [key, size] : writes) last[key] = size;
    size_t total = data_.stored_bytes();
    for (const auto& [key, size] : last) {
      const int64_t old = data_.value_size(std::string(key));
      total = total - (old < 0 ? 0 : key.size() + static_cast<size_t>(old)) + key.size() + size;
    }
    return total;
  }

  // Rejects (and returns false) when a value would be larger than any client can read back, or
  // the write would take the store from its size now to `after` past the server's cap (writes
  // that do not grow it always pass).
  bool fits(Conn& c, Op op, const std::string& key, size_t value_bytes, size_t after) {
    if (value_bytes > max_) {
      reject(c, fmt::format("{} on key '{}' would make its value {} bytes, above "
                            "max_message_bytes ({}): no client could read it back",
                            store_wire::op_name(op), key, value_bytes, max_));
      return false;
    }
    if (after > data_.stored_bytes() && after > lim_.max_store_bytes) {
      reject(c, fmt::format("store is full: {} on key '{}' would raise the stored keys and "
                            "values to {} bytes, above the server's cap ({})",
                            store_wire::op_name(op), key, after, lim_.max_store_bytes));
      return false;
    }
    return true;
  }

  void handle(Conn& c, Reader& r) {
    const Op op = static_cast<Op>(r.u8());
    if (op == Op::kAuth) {
      const std::string given = r.str();
      if (!secret_.empty() && !constant_time_equal(secret_, given)) {
        return reject(c, given.empty()
                             ? "store authentication failed: this store requires the job's "
                               "COLLIE_STORE_SECRET and the client has none"
                             : "store authentication failed: wrong COLLIE_STORE_SECRET (is "
                               "this rank from another job?)");
      }
      c.authed = true;
      // OK + whether this server requires the secret (TcpStore::members_only on the client).
      Writer w;
      w.u8(static_cast<uint8_t>(Status::kOk)).u8(secret_.empty() ? 0 : 1);
      return send_frame(c, w);
    }
    if (!c.authed) {
      return reject(c, fmt::format("store authentication failed: this store requires "
                                   "COLLIE_STORE_SECRET and the client sent {} without "
                                   "authenticating first",
                                   store_wire::op_name(op)));
    }
    switch (op) {
      case Op::kSet: {
        std::string key = r.str();
        Bytes value = r.bytes();
        if (!fits(c, op, key, value.size(), size_after({{key, value.size()}}))) return;
        data_.set(key, value);
        reply_ok(c);
        return notify({key});
      }
      case Op::kGet: {
        std::string key = r.str();
        return wait_or_reply(c, op, {std::move(key)}, r.i64());
      }
      case Op::kWait:
      case Op::kMultiGet: {
        auto keys = read_keys(r);
        return wait_or_reply(c, op, std::move(keys), r.i64());
      }
      case Op::kAdd: {
        std::string key = r.str();
        // A counter's decimal text is at most 20 bytes.
        if (!fits(c, op, key, 0, size_after({{key, 20}}))) return;
        const int64_t v = data_.add(key, r.i64());
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).i64(v);
        send_frame(c, w);
        return notify({key});
      }
      case Op::kCheck: {
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).u8(data_.check(read_keys(r)) ? 1 : 0);
        return send_frame(c, w);
      }
      case Op::kCompareSet: {
        std::string key = r.str();
        Bytes expected = r.bytes();
        Bytes desired = r.bytes();
        if (!fits(c, op, key, desired.size(), size_after({{key, desired.size()}}))) return;
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).bytes(data_.compare_set(key, expected, desired));
        send_frame(c, w);
        return notify({key});
      }
      case Op::kDeleteKey: {
        const std::string key = r.str();
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).u8(data_.delete_key(key) ? 1 : 0);
        return send_frame(c, w);
      }
      case Op::kNumKeys: {
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).i64(data_.num_keys());
        return send_frame(c, w);
      }
      case Op::kAppend: {
        std::string key = r.str();
        Bytes value = r.bytes();
        const size_t grown =
            static_cast<size_t>(std::max<int64_t>(data_.value_size(key), 0)) + value.size();
        if (!fits(c, op, key, grown, size_after({{key, grown}}))) return;
        data_.append(key, value);
        reply_ok(c);
        return notify({key});
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
        if (!keys.empty() && !fits(c, op, keys[0], largest, size_after(writes))) return;
        data_.multi_set(keys, values);
        reply_ok(c);
        return notify(keys);
      }
      case Op::kPing:
        return reply_ok(c);
      case Op::kAuth:
        break;  // handled above
    }
    reject(c, fmt::format("unknown store request op {}; client and server versions differ",
                          static_cast<int>(op)));
  }

  void wait_or_reply(Conn& c, Op op, std::vector<std::string> keys, int64_t timeout_ms) {
    if (data_.check(keys)) return reply_ready(c, op, keys);
    const auto now = SteadyClock::now();
    const int64_t capped = std::clamp<int64_t>(timeout_ms, 0, int64_t{1} << 40);
    Parked p{op, std::move(keys), now, now + std::chrono::milliseconds(capped)};
    for (const auto& k : p.keys) waiting_[k].push_back(c.id);
    deadlines_.emplace(p.deadline, c.id);
    c.parked = std::move(p);
  }

  void reply_ready(Conn& c, Op op, const std::vector<std::string>& keys) {
    Writer w;
    w.u8(static_cast<uint8_t>(Status::kOk));
    if (op == Op::kGet || op == Op::kMultiGet) {
      size_t total = 1;
      for (const auto& k : keys)
        total += 4 + static_cast<size_t>(std::max<int64_t>(0, data_.value_size(k)));
      if (total > max_) {
        return reply_error(c, fmt::format("{} reply on {} key(s) would be {} bytes, above "
                                          "max_message_bytes ({}); fetch fewer keys at a time",
                                          store_wire::op_name(op), keys.size(), total, max_));
      }
      for (const auto& v : data_.multi_get(keys)) w.bytes(v);
    }
    send_frame(c, w);
  }

  void unpark(Conn& c) {
    deadlines_.erase({c.parked->deadline, c.id});
    for (const auto& k : c.parked->keys) {
      auto it = waiting_.find(k);
      if (it == waiting_.end()) continue;
      std::erase(it->second, c.id);
      if (it->second.empty()) waiting_.erase(it);
    }
    c.parked.reset();
  }

  // Completes the parked requests that waited on any of `keys` and now have all their keys.
  void notify(const std::vector<std::string>& keys) {
    for (const auto& k : keys) {
      auto it = waiting_.find(k);
      if (it == waiting_.end()) continue;
      std::vector<uint64_t> ids = std::move(it->second);
      waiting_.erase(it);
      std::vector<uint64_t> still;
      for (uint64_t id : ids) {
        auto ci = conns_.find(id);
        if (ci == conns_.end() || !ci->second->parked || ci->second->dead) continue;
        Conn& c = *ci->second;
        if (!data_.check(c.parked->keys)) {
          still.push_back(id);
          continue;
        }
        const Op op = c.parked->op;
        auto pk = std::move(c.parked->keys);
        unpark(c);
        reply_ready(c, op, pk);
        process(c);
        settle(c);
      }
      if (!still.empty()) {
        auto& v = waiting_[k];
        v.insert(v.end(), still.begin(), still.end());
      }
    }
  }

  void expire() {
    const auto now = SteadyClock::now();
    if (accept_paused_ && now >= accept_resume_) {
      accept_paused_ = false;
      watch(listen_fd_, kListenId, EPOLLIN, EPOLL_CTL_ADD);
    }
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      const uint64_t id = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      auto ci = conns_.find(id);
      if (ci == conns_.end()) continue;
      Conn& c = *ci->second;
      if (!c.parked) continue;
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - c.parked->start);
      unpark(c);
      Writer w;
      w.u8(static_cast<uint8_t>(Status::kTimeout)).i64(waited.count());
      send_frame(c, w);
      process(c);
      settle(c);
    }
    while (!timers_.empty() && timers_.begin()->first <= now) {
      const uint64_t id = timers_.begin()->second;
      timers_.erase(timers_.begin());
      auto ci = conns_.find(id);
      if (ci == conns_.end()) continue;
      Conn& c = *ci->second;
      c.timer.reset();
      on_timer(c, now);
      settle(c);
    }
  }

  void on_timer(Conn& c, SteadyClock::time_point now) {
    if (c.dead) return;
    if (c.close_after_write || c.discarding) return mark_dead(c);
    if (!c.authed) {
      return reject(c, fmt::format("store authentication failed: no authentication within {} ms "
                                   "of connecting",
                                   ms(lim_.handshake_timeout)));
    }
    if (unconsumed(c) > 0) {
      return reject(c, fmt::format("store request not completed within {} ms ({} bytes of it "
                                   "arrived); the client stalled mid-message",
                                   ms(lim_.partial_frame_timeout), unconsumed(c)));
    }
    if (lim_.idle_timeout.count() > 0 && now - c.last_activity >= lim_.idle_timeout) {
      return reject(c,
                    fmt::format("store connection idle for {} ms; closed", ms(lim_.idle_timeout)));
    }
  }

  // Re-arms the connection's one timer for its current state (rejected: grace; not
  // authenticated: handshake; part of a request buffered: partial frame; quiet: idle).
  void settle(Conn& c) {
    std::optional<SteadyClock::time_point> want;
    if (c.dead) {
      want.reset();
    } else if (c.close_after_write || c.discarding) {
      want = c.reject_deadline;
    } else if (c.parked) {
      want.reset();
    } else if (!c.authed) {
      want = c.accepted + lim_.handshake_timeout;
    } else if (unconsumed(c) > 0) {
      want = c.partial_since + lim_.partial_frame_timeout;
    } else if (lim_.idle_timeout.count() > 0 && unsent(c) == 0) {
      want = c.last_activity + lim_.idle_timeout;
    }
    if (want == c.timer) return;
    if (c.timer) timers_.erase({*c.timer, c.id});
    c.timer = want;
    if (want) timers_.emplace(*want, c.id);
  }

  void reply_ok(Conn& c) {
    Writer w;
    w.u8(static_cast<uint8_t>(Status::kOk));
    send_frame(c, w);
  }

  void reply_error(Conn& c, std::string_view msg) {
    Writer w;
    w.u8(static_cast<uint8_t>(Status::kError)).str(msg);
    send_frame(c, w);
  }

  // Answers with an error, then stops reading this connection's requests and closes it (after
  // the client read the error, or after a grace period).
  void reject(Conn& c, std::string_view msg) {
    if (c.close_after_write || c.discarding || c.dead) return;
    log(LogLevel::Warning, "store server: rejecting a client: {}", msg);
    if (c.out_off == 0 && unsent(c) > kOutHighWater) {
      // It does not read its replies: drop them (whole frames only) to free the memory now.
      Bytes().swap(c.out);
    }
    Bytes().swap(c.in);
    c.in_off = 0;
    reply_error(c, msg);
    c.close_after_write = true;
    c.discard_left = conn_cap_;
    c.reject_deadline = SteadyClock::now() + kDiscardGrace;
    account(c);
    if (!c.want_out) finish_close(c);
  }

  // After a rejection: half-close so the client reads the error, discard what it still sends,
  // and drop it at EOF or when the grace period ends.
  void finish_close(Conn& c) {
    shutdown(c.fd, SHUT_WR);
    c.discarding = true;
  }

  void send_frame(Conn& c, Writer& w) {
    if (c.dead) return;
    const Bytes& f = w.finish();
    c.out.insert(c.out.end(), f.begin(), f.end());
    flush(c);
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return mark_dead(c);
      }
      c.out_off += static_cast<size_t>(n);
    }
    const bool pending = c.out_off < c.out.size();
    if (!pending) {
      c.out.clear();
      c.out_off = 0;
      if (c.out.capacity() > kKeepCapacity) Bytes().swap(c.out);
      c.last_activity = SteadyClock::now();
    }
    account(c);
    if (pending != c.want_out) {
      c.want_out = pending;
      watch(c.fd, c.id, (c.reading ? EPOLLIN : 0u) | (pending ? EPOLLOUT : 0u), EPOLL_CTL_MOD);
    }
    if (!pending && c.close_after_write && !c.discarding) finish_close(c);
    // Replies drained: requests held back by the high-water mark can go on.
    if (!pending && !c.close_after_write && unconsumed(c) > 0 && !c.parked) process(c);
  }

  void stop_reading(Conn& c) {
    c.reading = false;
    watch(c.fd, c.id, c.want_out ? EPOLLOUT : 0u, EPOLL_CTL_MOD);
  }

  void mark_dead(Conn& c) {
    if (c.dead) return;
    c.dead = true;
    to_close_.push_back(c.id);
  }

  void close_conn(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = *it->second;
    if (c.parked) unpark(c);
    if (c.timer) timers_.erase({*c.timer, c.id});
    held_total_ -= c.held;
    epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    conns_.erase(it);
  }

  int listen_fd_;
  TcpStoreLimits lim_;
  std::string secret_;
  size_t max_ = 0;
  size_t conn_cap_ = 0;
  int epfd_ = -1;
  int wake_fd_ = -1;
  bool stopping_ = false;
  bool accept_paused_ = false;
  SteadyClock::time_point accept_resume_;
  uint64_t next_id_ = 2;
  HashStore data_;
  size_t held_total_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiting_;
  std::set<std::pair<SteadyClock::time_point, uint64_t>> deadlines_;  // parked requests
  std::set<std::pair<SteadyClock::time_point, uint64_t>> timers_;     // Conn::timer
  std::vector<uint64_t> to_close_;
  WorkerThread thread_;  // last: runs run() over everything above
};

TcpStoreServer::TcpStoreServer(const std::string& host, uint16_t port, const TcpStoreLimits& limits,
                               std::string secret) {
  if (secret.size() > kMaxStoreSecretBytes) {
    throw InvalidArgument(fmt::format("{} is {} bytes; at most {} are allowed", kStoreSecretEnv,
                                      secret.size(), kMaxStoreSecretBytes));
  }
  const int fd = net::listen_on(host, port, &port_);
  loop_ = std::make_unique<Loop>(fd, limits, std::move(secret));
  loop_->start();
  log(LogLevel::Debug, "store server listening on {}:{}", host, port_);
}

size_t TcpStoreServer::stored_bytes() const { return loop_->stored_bytes(); }

TcpStoreServer::~TcpStoreServer() = default;  // ~Loop stops and joins its thread

}  // namespace collie
