#include "store/tcp_store_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/deadline.h"
#include "core/error.h"
#include "core/log.h"
#include "core/worker_thread.h"
#include "store/socket_util.h"
#include "store/store_engine.h"
#include "store/store_secret.h"
#include "store/tcp_store_protocol.h"

namespace collie {

using store_server::ReplySink;
using store_server::StoreEngine;
using store_wire::Op;
using store_wire::Reader;
using store_wire::Status;
using store_wire::Writer;
using SteadyClock = std::chrono::steady_clock;

namespace {
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
// How long a connection whose request was rejected may keep sending before it is cut off; the
// grace lets the client read the error instead of a connection reset. While the client still
// sends the rest of what was refused (at most the per-connection cap, discarded) or reads what
// was queued before the error (a loaded machine can take longer than the grace), the grace
// restarts, up to kRejectMaxGrace in all.
constexpr auto kDiscardGrace = std::chrono::seconds(2);
constexpr auto kRejectMaxGrace = std::chrono::seconds(30);
// Before authentication a frame can only be an AUTH: op byte + id + length + secret.
constexpr size_t kMaxAuthFrame = kMaxStoreSecretBytes + 16;
// Requests are not processed while this much reply data is unsent (the client is not reading);
// its input then piles up to the connection cap.
constexpr size_t kOutHighWater = 1u << 20;
// Empty buffers keep at most this much capacity.
constexpr size_t kKeepCapacity = 256u << 10;
// Replies at least this large are written at once when nothing is queued before them.
constexpr size_t kDirectSendBytes = 4u << 10;

int64_t ms(std::chrono::milliseconds d) { return d.count(); }

void bump_max(std::atomic<uint64_t>& m, uint64_t v) {
  uint64_t cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
}  // namespace

class TcpStoreServer::Loop : public ReplySink {
 public:
  Loop(int listen_fd, const TcpStoreLimits& limits, std::string secret)
      : listen_fd_(listen_fd), lim_(limits), secret_(std::move(secret)), engine_(lim_, *this) {
    max_ = lim_.max_message_bytes;
    conn_cap_ = lim_.max_connection_bytes ? lim_.max_connection_bytes : max_ + (1u << 20);
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epfd_ < 0 || wake_fd_ < 0) {
      throw NetworkError(fmt::format("store server: epoll/eventfd: {}", std::strerror(errno)));
    }
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    watch(listen_fd_, kListenId, EPOLLIN, EPOLL_CTL_ADD);
    watch(wake_fd_, kWakeId, EPOLLIN, EPOLL_CTL_ADD);
  }
  ~Loop() override {
    thread_.stop();  // before the descriptors it serves are closed
    for (auto& [id, c] : conns_) close(c->fd);
    close(listen_fd_);
    close(wake_fd_);
    close(epfd_);
    if (spare_fd_ >= 0) close(spare_fd_);
  }

  // Thread-safe.
  size_t stored_bytes() const { return engine_.stored_bytes(); }
  TcpStoreServer::Stats stats() const {
    TcpStoreServer::Stats s;
    s.requests = requests_.load(std::memory_order_relaxed);
    s.bytes_in = bytes_in_.load(std::memory_order_relaxed);
    s.bytes_out = bytes_out_.load(std::memory_order_relaxed);
    s.connections = connections_.load(std::memory_order_relaxed);
    s.peak_connections = peak_connections_.load(std::memory_order_relaxed);
    s.refused_no_descriptor = refused_.load(std::memory_order_relaxed);
    s.stored_bytes = engine_.stored_bytes();
    s.parked = engine_.parked_now();
    s.wait_steps = engine_.wait_steps();
    return s;
  }

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
      pump();
      for (uint64_t id : to_close_) close_conn(id);
      to_close_.clear();
    }
  }

  // ReplySink: queue the frame; the loop writes it out after the current request (pump()), so
  // the engine is never re-entered from inside one of its own calls.
  void send(uint64_t conn, uint32_t id, Status status, std::span<const uint8_t> body) override {
    auto it = conns_.find(conn);
    if (it == conns_.end()) return;
    Conn& c = *it->second;
    if (c.dead) return;
    const size_t payload = 5 + body.size();
    uint8_t head[9];
    for (size_t i = 0; i < 4; ++i) head[i] = static_cast<uint8_t>(payload >> (8 * i));
    for (size_t i = 0; i < 4; ++i) head[4 + i] = static_cast<uint8_t>(id >> (8 * i));
    head[8] = static_cast<uint8_t>(status);
    size_t sent = 0;
    if (c.out.empty() && body.size() >= kDirectSendBytes) {
      // Nothing queued before it: write it now, straight from the caller's buffer (a gather's
      // joined values go to N members without N copies into N queues); only what the socket
      // does not take is queued.
      iovec iov[2] = {{head, sizeof(head)}, {const_cast<uint8_t*>(body.data()), body.size()}};
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = 2;
      const ssize_t n = sendmsg(c.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return mark_dead(c);
      sent = n > 0 ? static_cast<size_t>(n) : 0;
      bytes_out_.fetch_add(sent, std::memory_order_relaxed);
      if (sent == sizeof(head) + body.size()) {
        c.last_activity = SteadyClock::now();
        return;
      }
    }
    if (c.out.empty() && sent > 0) c.out_head_tail = sizeof(head) + body.size() - sent;
    if (sent < sizeof(head)) c.out.insert(c.out.end(), head + sent, head + sizeof(head));
    const size_t body_sent = sent > sizeof(head) ? sent - sizeof(head) : 0;
    c.out.insert(c.out.end(), body.begin() + static_cast<std::ptrdiff_t>(body_sent), body.end());
    mark_dirty(c);
  }
  void reject(uint64_t conn, uint32_t id, std::string_view msg) override {
    auto it = conns_.find(conn);
    if (it != conns_.end()) reject(*it->second, id, msg);
  }

 private:
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
    bool reading = true;       // EPOLLIN watched
    bool dirty = false;        // listed in dirty_: replies queued since the last flush
    size_t discard_left = 0;   // after a rejection: bytes still read and dropped
    size_t held = 0;           // bytes counted in held_total_
    size_t out_head_tail = 0;  // out starts with this much of a frame written in part directly
    size_t undelivered = 0;    // after a rejection: unsent + kernel-queued bytes at the last check
    bool sent_since_check = false;  // after a rejection: it sent bytes we discarded since then
    SteadyClock::time_point accepted, partial_since, last_activity, reject_deadline, rejected_at;
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

  void mark_dirty(Conn& c) {
    if (c.dirty) return;
    c.dirty = true;
    dirty_.push_back(c.id);
  }

  int next_timeout_ms() const {
    std::optional<SteadyClock::time_point> next = engine_.next_deadline();
    if (!timers_.empty() && (!next || timers_.begin()->first < *next)) {
      next = timers_.begin()->first;
    }
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
    if ((ev.events & EPOLLOUT) && !c.dead) mark_dirty(c);
    if ((ev.events & (EPOLLERR | EPOLLHUP)) && !(ev.events & EPOLLIN)) mark_dead(c);
    settle(c);
  }

  void accept_all() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          if (refuse_one()) continue;
        } else if (errno == ENOBUFS || errno == ENOMEM) {
          log(LogLevel::Warning, "store server: accept: {} ({} clients)", std::strerror(errno),
              conns_.size());
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
      connections_.store(conns_.size(), std::memory_order_relaxed);
      bump_max(peak_connections_, conns_.size());
      settle(ref);
    }
  }

  // Out of descriptors: take the pending client with the descriptor kept in reserve, tell it
  // why in one error reply, close it and take the reserve back. The client's rendezvous then
  // fails at once with that line instead of waiting out its timeout, and the loop never spins on
  // a listen socket that stays readable. Returns false when not even that worked.
  bool refuse_one() {
    if (spare_fd_ < 0) return false;
    close(spare_fd_);
    spare_fd_ = -1;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      const std::string msg = fmt::format(
          "store server (rank 0's process) is out of file descriptors with {} clients "
          "connected: raise the open-files limit on its host (`ulimit -n`, LimitNOFILE); collie "
          "raises the soft limit to the hard limit, so the hard limit is what is too low",
          conns_.size());
      const size_t payload = 5 + msg.size();
      Bytes frame;
      for (size_t i = 0; i < 4; ++i) frame.push_back(static_cast<uint8_t>(payload >> (8 * i)));
      for (size_t i = 0; i < 4; ++i) frame.push_back(0);  // kAuthId: the client's first request
      frame.push_back(static_cast<uint8_t>(Status::kError));
      frame.insert(frame.end(), msg.begin(), msg.end());
      [[maybe_unused]] ssize_t n =
          ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      refused_.fetch_add(1, std::memory_order_relaxed);
      if (refused_.load(std::memory_order_relaxed) == 1) log(LogLevel::Error, "{}", msg);
    }
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd >= 0 && spare_fd_ >= 0;
  }

  void on_readable(Conn& c) {
    uint8_t buf[64 * 1024];
    // At most 4 MiB per wake-up, so one fast sender cannot monopolize the loop (epoll is
    // level-triggered: the rest is read on the next round).
    for (int round = 0; round < 64; ++round) {
      const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        bytes_in_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        if (c.discarding || c.close_after_write) {
          // Let a client finish sending the request that was refused (so it reads our error
          // rather than a reset), but not stream forever: past the budget, stop reading.
          c.sent_since_check = true;
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
  // A connection holds its buffers and its parked requests.
  bool over_caps(Conn& c) {
    account(c);
    if (c.close_after_write || c.discarding || c.dead) return c.dead;
    const size_t held = unconsumed(c) + unsent(c) + engine_.parked_bytes(c.id);
    if (held > conn_cap_) {
      reject(c, 0,
             fmt::format("store client holds {} bytes of unprocessed requests, unread replies and "
                         "parked waits, above the per-connection cap ({}); a client must read its "
                         "replies before sending more",
                         held, conn_cap_));
      return true;
    }
    if (held_total_ > lim_.max_total_buffered_bytes) {
      reject(c, 0,
             fmt::format("store server buffers {} bytes for its clients, above its cap ({}); "
                         "this client was cut off",
                         held_total_, lim_.max_total_buffered_bytes));
      return true;
    }
    return false;
  }

  void account(Conn& c) {
    const size_t now_held =
        c.dead ? 0 : c.in.capacity() + c.out.capacity() + engine_.parked_bytes(c.id);
    held_total_ = held_total_ - c.held + now_held;
    c.held = now_held;
  }

  void process(Conn& c) {
    while (!c.close_after_write && !c.discarding && !c.dead && unsent(c) < kOutHighWater) {
      const size_t avail = unconsumed(c);
      if (avail < store_wire::kHeaderBytes) break;
      const uint32_t len = store_wire::decode_u32(c.in.data() + c.in_off);
      if (!c.authed && len > kMaxAuthFrame) {
        reject(c, store_wire::kAuthId,
               fmt::format("store authentication failed: this store requires "
                           "COLLIE_STORE_SECRET and the client's first request ({} bytes) is "
                           "not an authentication; set the job's secret on every rank",
                           len));
        break;
      }
      if (len > max_) {
        reject(c, 0,
               fmt::format("request of {} bytes exceeds the store server's max_message_bytes "
                           "({}); store smaller values or raise max_message_bytes on the server",
                           len, max_));
        break;
      }
      if (avail < store_wire::kHeaderBytes + len) break;
      Reader r(c.in.data() + c.in_off + store_wire::kHeaderBytes, len);
      c.in_off += store_wire::kHeaderBytes + len;
      c.partial_since = SteadyClock::now();
      requests_.fetch_add(1, std::memory_order_relaxed);
      uint32_t id = 0;
      try {
        const Op op = static_cast<Op>(r.u8());
        id = r.u32();
        handle(c, op, id, r);
      } catch (const store_wire::MalformedMessage& e) {
        reject(c, id, e.what());
        break;
      } catch (const InvalidArgument& e) {
        send(c.id, id, Status::kInvalid,
             {reinterpret_cast<const uint8_t*>(e.what()), std::strlen(e.what())});
      } catch (const StoreError& e) {
        reply_error(c, id, e.what());
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
    account(c);
  }

  void handle(Conn& c, Op op, uint32_t id, Reader& r) {
    if (op == Op::kAuth) {
      const std::string given = r.str();
      if (!secret_.empty() && !constant_time_equal(secret_, given)) {
        return reject(c, id,
                      given.empty() ? "store authentication failed: this store requires the job's "
                                      "COLLIE_STORE_SECRET and the client has none"
                                    : "store authentication failed: wrong COLLIE_STORE_SECRET (is "
                                      "this rank from another job?)");
      }
      c.authed = true;
      // OK + whether this server requires the secret (TcpStore::members_only on the client).
      const uint8_t requires_secret = secret_.empty() ? 0 : 1;
      return send(c.id, id, Status::kOk, {&requires_secret, 1});
    }
    if (!c.authed) {
      return reject(c, id,
                    fmt::format("store authentication failed: this store requires "
                                "COLLIE_STORE_SECRET and the client sent {} without "
                                "authenticating first",
                                store_wire::op_name(op)));
    }
    if (op == Op::kCancel) return engine_.cancel(c.id, r.u32());
    engine_.handle(c.id, id, op, r);
  }

  // Writes what the engine queued (in the order it was queued), and lets connections whose
  // input waited behind unsent replies go on; until nothing is left to do.
  void pump() {
    while (!dirty_.empty()) {
      std::vector<uint64_t> ids;
      ids.swap(dirty_);
      for (uint64_t id : ids) {
        auto it = conns_.find(id);
        if (it == conns_.end()) continue;
        Conn& c = *it->second;
        c.dirty = false;
        if (!c.dead) flush(c);
        // Replies drained: requests held back by the high-water mark can go on.
        if (!c.dead && !c.close_after_write && unsent(c) < kOutHighWater && unconsumed(c) > 0) {
          process(c);
        }
        settle(c);
      }
    }
  }

  void expire() {
    const auto now = SteadyClock::now();
    engine_.expire(now);
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
    if (c.close_after_write || c.discarding) {
      if (!still_reading_its_error(c, now)) return mark_dead(c);
      c.reject_deadline = now + kDiscardGrace;
      return;
    }
    if (!c.authed) {
      return reject(c, store_wire::kAuthId,
                    fmt::format("store authentication failed: no authentication within {} ms "
                                "of connecting",
                                ms(lim_.handshake_timeout)));
    }
    if (unconsumed(c) > 0) {
      return reject(c, 0,
                    fmt::format("store request not completed within {} ms ({} bytes of it "
                                "arrived); the client stalled mid-message",
                                ms(lim_.partial_frame_timeout), unconsumed(c)));
    }
    if (lim_.idle_timeout.count() > 0 && now - c.last_activity >= lim_.idle_timeout) {
      return reject(c, 0,
                    fmt::format("store connection idle for {} ms; closed", ms(lim_.idle_timeout)));
    }
  }

  // Re-arms the connection's one timer for its current state (rejected: grace; not
  // authenticated: handshake; part of a request buffered: partial frame; quiet with nothing
  // parked: idle).
  void settle(Conn& c) {
    std::optional<SteadyClock::time_point> want;
    if (c.dead) {
      want.reset();
    } else if (c.close_after_write || c.discarding) {
      want = c.reject_deadline;
    } else if (!c.authed) {
      want = c.accepted + lim_.handshake_timeout;
    } else if (unconsumed(c) > 0) {
      want = c.partial_since + lim_.partial_frame_timeout;
    } else if (lim_.idle_timeout.count() > 0 && unsent(c) == 0 && engine_.parked(c.id) == 0) {
      want = c.last_activity + lim_.idle_timeout;
    }
    if (want == c.timer) return;
    if (c.timer) timers_.erase({*c.timer, c.id});
    c.timer = want;
    if (want) timers_.emplace(*want, c.id);
  }

  void reply_error(Conn& c, uint32_t id, std::string_view msg) {
    send(c.id, id, Status::kError, {reinterpret_cast<const uint8_t*>(msg.data()), msg.size()});
  }

  // Answers with an error, then stops reading this connection's requests and closes it (after
  // the client read the error, or after a grace period).
  void reject(Conn& c, uint32_t id, std::string_view msg) {
    if (c.close_after_write || c.discarding || c.dead) return;
    log(LogLevel::Warning, "store server: rejecting a client: {}", msg);
    drop_unstarted_replies(c);
    Bytes().swap(c.in);
    c.in_off = 0;
    engine_.drop(c.id);
    reply_error(c, id, msg);
    c.close_after_write = true;
    c.discard_left = conn_cap_;
    c.rejected_at = SteadyClock::now();
    c.reject_deadline = c.rejected_at + kDiscardGrace;
    c.undelivered = undelivered(c);
    account(c);
  }

  // Bytes the rejected client has not received yet: queued here and in the kernel. Nothing is
  // queued after a rejection, so this only falls, as the client reads.
  static size_t undelivered(const Conn& c) {
    int queued = 0;
    if (ioctl(c.fd, SIOCOUTQ, &queued) != 0 || queued < 0) queued = 0;
    return unsent(c) + static_cast<size_t>(queued);
  }

  // True when the rejected client has not received all that is ahead of its error and, since
  // the last check, read some of it or still sent (what it sends is discarded: a client that
  // is still writing its refused request has not begun to read; a CI run under ASan cut one
  // off 2 s after the rejection, mid-send, and it saw a reset instead of the error), within
  // kRejectMaxGrace of the rejection.
  static bool still_reading_its_error(Conn& c, SteadyClock::time_point now) {
    const size_t left = undelivered(c);
    const bool progressed = left < c.undelivered || c.sent_since_check;
    c.undelivered = left;
    c.sent_since_check = false;
    return left > 0 && progressed && now - c.rejected_at < kRejectMaxGrace;
  }

  // Drops the replies not begun yet (whole frames; the one being written is kept), so the
  // rejection's error goes out next and a client that does not read frees its memory now.
  static void drop_unstarted_replies(Conn& c) {
    // c.out holds whole frames after out_head_tail bytes (the end of a frame send() took in part
    // before it was queued); keep through the end of the frame byte out_off - 1 belongs to.
    size_t end = c.out_head_tail;
    while (end < c.out_off) end += store_wire::kHeaderBytes + store_wire::decode_u32(&c.out[end]);
    c.out.resize(end);
    if (c.out_off == c.out.size()) {
      Bytes().swap(c.out);
      c.out_off = 0;
      c.out_head_tail = 0;
    }
  }

  // After a rejection: half-close so the client reads the error, discard what it still sends,
  // and drop it at EOF or when the grace period ends.
  void finish_close(Conn& c) {
    shutdown(c.fd, SHUT_WR);
    c.discarding = true;
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return mark_dead(c);
      }
      bytes_out_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      c.out_off += static_cast<size_t>(n);
    }
    const bool pending = c.out_off < c.out.size();
    if (!pending) {
      c.out.clear();
      c.out_off = 0;
      c.out_head_tail = 0;
      if (c.out.capacity() > kKeepCapacity) Bytes().swap(c.out);
      c.last_activity = SteadyClock::now();
    }
    account(c);
    if (pending != c.want_out) {
      c.want_out = pending;
      watch(c.fd, c.id, (c.reading ? EPOLLIN : 0u) | (pending ? EPOLLOUT : 0u), EPOLL_CTL_MOD);
    }
    if (!pending && c.close_after_write && !c.discarding) finish_close(c);
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
    engine_.drop(c.id);
    if (c.timer) timers_.erase({*c.timer, c.id});
    held_total_ -= c.held;
    epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    conns_.erase(it);
    connections_.store(conns_.size(), std::memory_order_relaxed);
  }

  int listen_fd_;
  TcpStoreLimits lim_;
  std::string secret_;
  size_t max_ = 0;
  size_t conn_cap_ = 0;
  int epfd_ = -1;
  int wake_fd_ = -1;
  int spare_fd_ = -1;  // a descriptor kept in reserve for refuse_one()
  bool stopping_ = false;
  uint64_t next_id_ = 2;
  size_t held_total_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::set<std::pair<SteadyClock::time_point, uint64_t>> timers_;  // Conn::timer
  std::vector<uint64_t> to_close_;
  std::vector<uint64_t> dirty_;  // connections with replies queued (pump())
  std::atomic<uint64_t> requests_{0}, bytes_in_{0}, bytes_out_{0}, connections_{0},
      peak_connections_{0}, refused_{0};
  StoreEngine engine_;   // after the connections: its sink is this loop
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

TcpStoreServer::Stats TcpStoreServer::stats() const { return loop_->stats(); }

TcpStoreServer::~TcpStoreServer() = default;  // ~Loop stops and joins its thread

}  // namespace collie
