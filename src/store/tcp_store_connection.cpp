#include "store/tcp_store_connection.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/deadline.h"
#include "core/error.h"
#include "store/socket_util.h"
#include "store/store_secret.h"

namespace collie {

using store_wire::Op;
using store_wire::Reader;
using store_wire::Status;
using store_wire::Writer;
using SteadyClock = std::chrono::steady_clock;

namespace {
// Offset of the request id in a request payload (after the op byte).
constexpr size_t kIdOffset = 1;

}  // namespace

Writer StoreConnection::request(Op op) {
  Writer w;
  w.u8(static_cast<uint8_t>(op)).u32(0);
  return w;
}

StoreConnection::StoreConnection(const std::string& host, uint16_t port, Millis timeout,
                                 size_t max_bytes, const std::string& secret)
    : peer_(fmt::format("{}:{}", host, port)), max_(max_bytes) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    throw NetworkError(fmt::format("TcpStore {}: eventfd: {}", peer_, std::strerror(errno)));
  }
  try {
    fd_ = net::connect_with_retry(host, port, timeout);
    authenticate(secret, timeout);
  } catch (...) {
    if (fd_ >= 0) close(fd_);
    close(wake_fd_);
    throw;
  }
}

StoreConnection::~StoreConnection() {
  close(fd_);
  close(wake_fd_);
}

// The first frame of the connection: AUTH with the secret ("" = none; a server without a
// secret accepts it).
void StoreConnection::authenticate(const std::string& secret, Millis timeout) {
  Writer w = request(Op::kAuth);
  w.str(secret);
  const std::vector<std::string> none;
  Request req{Op::kAuth, &w, &none};
  const std::atomic<bool> never{false};
  const Bytes reply = exchange({&req, 1}, timeout, never, true).front();
  server_requires_secret_ = !reply.empty() && reply[0] == 1;
}

void StoreConnection::interrupt_wake() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

std::vector<Bytes> StoreConnection::call_all(std::span<Request> reqs, Millis io_budget,
                                             const std::atomic<bool>& stop) {
  return exchange(reqs, io_budget, stop, false);
}

void StoreConnection::send_frames(const Bytes& out, SteadyClock::time_point deadline) {
  std::lock_guard<std::mutex> wl(write_mu_);
  net::send_all(fd_, out.data(), out.size(), deadline, peer_);
}

// Best effort: tells the server to drop requests no one waits for any more.
void StoreConnection::cancel(const std::vector<uint32_t>& ids) {
  if (ids.empty()) return;
  Bytes out;
  for (uint32_t id : ids) {
    Writer w = request(Op::kCancel);
    w.u32(id);
    const Bytes& f = w.finish();
    out.insert(out.end(), f.begin(), f.end());
  }
  try {
    send_frames(out, SteadyClock::now() + std::chrono::milliseconds(1000));
  } catch (const Error&) {
    // the connection is going anyway
  }
}

std::vector<Bytes> StoreConnection::exchange(std::span<Request> reqs, Millis io_budget,
                                             const std::atomic<bool>& stop, bool auth) {
  for (auto& r : reqs) {
    if (r.w->payload_size() > max_) {
      throw StoreError(fmt::format(
          "TcpStore {}: {} request on key(s) [{}] is {} bytes, above max_message_bytes ({}); "
          "store smaller values or raise TcpStoreOptions::max_message_bytes on every rank",
          peer_, store_wire::op_name(r.op), fmt::join(*r.keys, ", "), r.w->payload_size(), max_));
    }
  }
  const auto deadline = SteadyClock::now() + io_budget;
  std::vector<Slot> slots(reqs.size());
  std::vector<uint32_t> ids(reqs.size());
  Bytes out;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop.load()) throw_store_interrupted(*reqs[0].keys, fmt::format("TcpStore {}", peer_));
    if (broken_ && rejected_)
      throw StoreError(fmt::format("TcpStore {}: {}", peer_, broken_reason_));
    if (broken_) {
      throw NetworkError(
          fmt::format("TcpStore {}: the connection broke earlier ({}); create a new store client",
                      peer_, broken_reason_));
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (auth) {
        ids[i] = store_wire::kAuthId;
      } else {
        do {
          ids[i] = next_id_++;
        } while (ids[i] == store_wire::kAuthId || slots_.count(ids[i]));
      }
      slots_[ids[i]] = &slots[i];
      reqs[i].w->set_u32_at(kIdOffset, ids[i]);
      const Bytes& frame = reqs[i].w->finish();
      out.insert(out.end(), frame.begin(), frame.end());
    }
  }
  auto forget = [&] {  // REQUIRES: mu_ held
    std::vector<uint32_t> pending;
    for (size_t i = 0; i < ids.size(); ++i) {
      slots_.erase(ids[i]);
      if (!slots[i].done) pending.push_back(ids[i]);
    }
    return pending;
  };
  const Request* at = &reqs[0];
  try {
    send_frames(out, deadline);
  } catch (const NetworkError& e) {
    std::lock_guard<std::mutex> lk(mu_);
    fail_all(e.what());
    forget();
    throw NetworkError(fmt::format("TcpStore {} on key(s) [{}]: {}", store_wire::op_name(at->op),
                                   fmt::join(*at->keys, ", "), e.what()));
  }
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    size_t waiting = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!slots[i].done) {
        if (!waiting) at = &reqs[i];
        ++waiting;
      }
    }
    if (waiting == 0) break;
    if (broken_) {
      forget();
      if (rejected_) throw StoreError(fmt::format("TcpStore {}: {}", peer_, broken_reason_));
      throw NetworkError(fmt::format("TcpStore {} on key(s) [{}]: {}", store_wire::op_name(at->op),
                                     fmt::join(*at->keys, ", "), broken_reason_));
    }
    if (stop.load()) {
      auto pending = forget();
      lk.unlock();
      cancel(pending);
      throw_store_interrupted(*at->keys, fmt::format("TcpStore {}", peer_));
    }
    if (SteadyClock::now() >= deadline) {
      auto pending = forget();
      lk.unlock();
      cancel(pending);
      throw NetworkError(fmt::format("TcpStore {} on key(s) [{}]: {}", store_wire::op_name(at->op),
                                     fmt::join(*at->keys, ", "), net::no_reply_message(peer_)));
    }
    if (!reading_) {
      reading_ = true;
      lk.unlock();
      read_some(deadline);
      lk.lock();
      reading_ = false;
      cv_.notify_all();  // the next waiter takes the reader role
      continue;
    }
    cv_.wait_until(lk, deadline);
  }
  forget();
  lk.unlock();
  std::vector<Bytes> payloads(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    Bytes& payload = slots[i].payload;
    Reader r(payload.data(), payload.size());
    const auto status = static_cast<Status>(r.u8());
    if (status == Status::kTimeout) {
      throw_store_timeout(*reqs[i].keys, Millis(r.i64()), fmt::format("TcpStore {}", peer_));
    }
    if (status == Status::kInvalid) {
      throw InvalidArgument(std::string(payload.begin() + 1, payload.end()));
    }
    if (status == Status::kError) {
      const std::string msg(payload.begin() + 1, payload.end());
      if (auth || msg.rfind("store authentication failed", 0) == 0) {
        std::lock_guard<std::mutex> g(mu_);
        broken_ = true;
        broken_reason_ = msg;
        if (msg.rfind("store authentication failed", 0) == 0) {
          throw StoreError(fmt::format("{} (store {}; every rank of a job needs the same {})", msg,
                                       peer_, kStoreSecretEnv));
        }
        throw StoreError(fmt::format("TcpStore {}: {}", peer_, msg));
      }
      throw StoreError(fmt::format("TcpStore {}: {}", peer_, msg));
    }
    payloads[i].assign(payload.begin() + 1, payload.end());
  }
  return payloads;
}

void StoreConnection::fail_all(const std::string& why) {
  if (!broken_) {
    broken_ = true;
    broken_reason_ = why;
  }
  cv_.notify_all();
}

void StoreConnection::read_some(SteadyClock::time_point deadline) {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  const int r = poll(fds, 2, poll_timeout_ms(deadline));
  if (r < 0) {
    if (errno == EINTR) return;
    std::lock_guard<std::mutex> lk(mu_);
    return fail_all(fmt::format("poll: {}", std::strerror(errno)));
  }
  if (fds[1].revents & POLLIN) {
    uint64_t v;
    [[maybe_unused]] ssize_t n = read(wake_fd_, &v, sizeof(v));
  }
  if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) return;
  uint8_t buf[64 * 1024];
  const ssize_t got = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    const std::string why =
        got == 0 ? "the server closed the connection" : std::string(std::strerror(errno));
    std::lock_guard<std::mutex> lk(mu_);
    return fail_all(net::lost_message(peer_, why));
  }
  if (got < 0) return;
  rbuf_.insert(rbuf_.end(), buf, buf + got);
  size_t off = 0;
  std::lock_guard<std::mutex> lk(mu_);
  while (rbuf_.size() - off >= store_wire::kHeaderBytes) {
    const uint32_t len = store_wire::decode_u32(rbuf_.data() + off);
    if (len > max_ + 16 || len < 5) {
      rbuf_.clear();
      return fail_all(
          fmt::format("a reply frame of {} bytes is outside max_message_bytes ({}); raise "
                      "TcpStoreOptions::max_message_bytes on every rank",
                      len, max_));
    }
    if (rbuf_.size() - off < store_wire::kHeaderBytes + len) break;
    const uint8_t* p = rbuf_.data() + off + store_wire::kHeaderBytes;
    const uint32_t id = store_wire::decode_u32(p);
    auto it = slots_.find(id);
    if (it != slots_.end() && !it->second->done) {
      it->second->payload.assign(p + 4, p + len);
      it->second->done = true;
    } else if (id == store_wire::kAuthId && p[4] == static_cast<uint8_t>(Status::kError)) {
      // The server cut this connection off before it knew which request broke a limit (a
      // frame over max_message_bytes, a stalled request, a full buffer): every caller hears it.
      std::string msg(p + 5, p + len);
      rbuf_.clear();
      rejected_ = true;
      return fail_all(msg);
    }
    off += store_wire::kHeaderBytes + len;
  }
  rbuf_.erase(rbuf_.begin(), rbuf_.begin() + static_cast<std::ptrdiff_t>(off));
  cv_.notify_all();
}

}  // namespace collie
