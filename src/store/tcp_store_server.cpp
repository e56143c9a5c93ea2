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
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "store/hash_store.h"
#include "store/socket_util.h"
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
}  // namespace

class TcpStoreServer::Loop {
 public:
  Loop(int listen_fd, size_t max_bytes) : listen_fd_(listen_fd), max_(max_bytes) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epfd_ < 0 || wake_fd_ < 0) {
      throw NetworkError(fmt::format("store server: epoll/eventfd: {}", std::strerror(errno)));
    }
    watch(listen_fd_, kListenId, EPOLLIN, EPOLL_CTL_ADD);
    watch(wake_fd_, kWakeId, EPOLLIN, EPOLL_CTL_ADD);
  }
  ~Loop() {
    for (auto& [id, c] : conns_) close(c->fd);
    close(listen_fd_);
    close(wake_fd_);
    close(epfd_);
  }

  void stop() {
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
    std::optional<Parked> parked;
    SteadyClock::time_point discard_deadline;
  };

  void watch(int fd, uint64_t id, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    epoll_ctl(epfd_, op, fd, &ev);
  }

  int next_timeout_ms() const {
    std::optional<SteadyClock::time_point> next;
    if (!deadlines_.empty()) next = deadlines_.begin()->first;
    if (accept_paused_ && (!next || accept_resume_ < *next)) next = accept_resume_;
    if (!next) return -1;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - SteadyClock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
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
      watch(fd, c->id, EPOLLIN, EPOLL_CTL_ADD);
      conns_.emplace(c->id, std::move(c));
    }
  }

  void on_readable(Conn& c) {
    uint8_t buf[64 * 1024];
    for (;;) {
      const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        if (!c.discarding) c.in.insert(c.in.end(), buf, buf + n);
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        mark_dead(c);
        return;
      }
      if (errno != EINTR) break;
    }
    process(c);
  }

  void process(Conn& c) {
    while (!c.parked && !c.close_after_write && !c.discarding && !c.dead) {
      const size_t avail = c.in.size() - c.in_off;
      if (avail < store_wire::kHeaderBytes) break;
      const uint32_t len = store_wire::decode_u32(c.in.data() + c.in_off);
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
    } else if (c.in_off > (1u << 20)) {
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_off));
      c.in_off = 0;
    }
  }

  static std::vector<std::string> read_keys(Reader& r) {
    const uint32_t n = r.u32();
    std::vector<std::string> keys;
    for (uint32_t i = 0; i < n; ++i) keys.push_back(r.str());  // bounded by the frame size
    return keys;
  }

  void handle(Conn& c, Reader& r) {
    const Op op = static_cast<Op>(r.u8());
    switch (op) {
      case Op::kSet: {
        std::string key = r.str();
        data_.set(key, r.bytes());
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
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).bytes(data_.compare_set(key, expected, desired));
        send_frame(c, w);
        return notify({key});
      }
      case Op::kDeleteKey: {
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).u8(data_.delete_key(r.str()) ? 1 : 0);
        return send_frame(c, w);
      }
      case Op::kNumKeys: {
        Writer w;
        w.u8(static_cast<uint8_t>(Status::kOk)).i64(data_.num_keys());
        return send_frame(c, w);
      }
      case Op::kAppend: {
        std::string key = r.str();
        data_.append(key, r.bytes());
        reply_ok(c);
        return notify({key});
      }
      case Op::kMultiSet: {
        auto keys = read_keys(r);
        std::vector<Bytes> values;
        for (size_t i = 0; i < keys.size(); ++i) values.push_back(r.bytes());
        data_.multi_set(keys, values);
        reply_ok(c);
        return notify(keys);
      }
      case Op::kPing:
        return reply_ok(c);
    }
    reject(c, fmt::format("unknown store request op {}; client and server versions differ",
                          static_cast<int>(op)));
  }

  void wait_or_reply(Conn& c, Op op, std::vector<std::string> keys, int64_t timeout_ms) {
    if (data_.check(keys)) return reply_ready(c, op, keys);
    const auto now = SteadyClock::now();
    Parked p{op, std::move(keys), now,
             now + std::chrono::milliseconds(std::max<int64_t>(0, timeout_ms))};
    for (const auto& k : p.keys) waiting_[k].push_back(c.id);
    deadlines_.emplace(p.deadline, c.id);
    c.parked = std::move(p);
  }

  void reply_ready(Conn& c, Op op, const std::vector<std::string>& keys) {
    Writer w;
    w.u8(static_cast<uint8_t>(Status::kOk));
    if (op == Op::kGet || op == Op::kMultiGet) {
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
      if (c.discarding) {
        mark_dead(c);
        continue;
      }
      if (!c.parked) continue;
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - c.parked->start);
      unpark(c);
      Writer w;
      w.u8(static_cast<uint8_t>(Status::kTimeout)).i64(waited.count());
      send_frame(c, w);
      process(c);
    }
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

  // Answers with an error, then stops reading this connection's requests and closes it.
  void reject(Conn& c, std::string_view msg) {
    log(LogLevel::Warning, "store server: rejecting a client: {}", msg);
    reply_error(c, msg);
    c.close_after_write = true;
    c.in.clear();
    c.in_off = 0;
    if (!c.want_out) finish_close(c);
  }

  // After a rejection: half-close so the client reads the error, discard what it still sends,
  // and drop it at EOF or after a grace period.
  void finish_close(Conn& c) {
    shutdown(c.fd, SHUT_WR);
    c.discarding = true;
    c.discard_deadline = SteadyClock::now() + kDiscardGrace;
    deadlines_.emplace(c.discard_deadline, c.id);
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
    }
    if (pending != c.want_out) {
      c.want_out = pending;
      watch(c.fd, c.id, EPOLLIN | (pending ? EPOLLOUT : 0u), EPOLL_CTL_MOD);
    }
    if (!pending && c.close_after_write && !c.discarding) finish_close(c);
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
    if (c.discarding) deadlines_.erase({c.discard_deadline, c.id});
    epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    conns_.erase(it);
  }

  int listen_fd_;
  size_t max_;
  int epfd_ = -1;
  int wake_fd_ = -1;
  bool stopping_ = false;
  bool accept_paused_ = false;
  SteadyClock::time_point accept_resume_;
  uint64_t next_id_ = 2;
  HashStore data_;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiting_;
  std::set<std::pair<SteadyClock::time_point, uint64_t>> deadlines_;
  std::vector<uint64_t> to_close_;
};

TcpStoreServer::TcpStoreServer(const std::string& host, uint16_t port, size_t max_message_bytes) {
  const int fd = net::listen_on(host, port, &port_);
  loop_ = std::make_unique<Loop>(fd, max_message_bytes);
  thread_ = std::thread([this] { loop_->run(); });
  log(LogLevel::Debug, "store server listening on {}:{}", host, port_);
}

TcpStoreServer::~TcpStoreServer() {
  loop_->stop();
  thread_.join();
}

}  // namespace collie
