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
#include "core/thread_name.h"
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
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  // A forked child's copy has no reader thread of its own (threads do not survive fork). The
  // reader is detached (a process that exits without destroying its store leaves no joinable
  // thread behind); its last act is to fulfil reader_done_.
  if (reader_done_.valid() && reader_pid_ == getpid()) reader_done_.wait();
  close(fd_);
  close(wake_fd_);
}

void StoreConnection::reader_loop() {
  name_this_thread("collie-store-rd");
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stopping_ || broken_) return;
    }
    read_some(SteadyClock::now() + std::chrono::hours(24));
  }
}

void StoreConnection::run_reader(std::promise<void> done) {
  reader_loop();
  done.set_value();  // the last touch of this thread; `this` may be gone right after
}

void StoreConnection::start_reader() {
  std::lock_guard<std::mutex> lk(mu_);
  if (reader_thread_ && reader_pid_ == getpid()) return;
  start_reader_locked();
}

void StoreConnection::start_reader_locked() {
  reader_thread_ = true;
  reader_pid_ = getpid();
  std::promise<void> done;
  reader_done_ = done.get_future();  // drops a forked child's copy of the parent's
  std::thread([this, d = std::move(done)]() mutable { run_reader(std::move(d)); }).detach();
  if (reading_) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
  }
}

void StoreConnection::notify_all_slots() {
  for (auto& [id, slot] : slots_) slot->cv.notify_all();
  cv_.notify_all();
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
    notify_all_slots();
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
  if (reader_thread_ && reader_pid_ != getpid()) {
    reader_thread_ = false;  // a forked child's copy: its callers read for themselves
    reading_ = false;
  }
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
    if (!reader_thread_ && !reading_) {
      reading_ = true;
      lk.unlock();
      read_some(deadline);
      lk.lock();
      reading_ = false;
      cv_.notify_all();  // a caller waiting for the role (before the reader thread started)
      continue;
    }
    // Two callers wait at once: from now on the reader thread reads, so that neither is woken
    // by the other's replies; the caller reading now steps down at the wake.
    if (!reader_thread_) start_reader_locked();
    Slot& first = *slots_.at(ids[at - &reqs[0]]);
    if (reading_) {
      cv_.wait_until(lk, deadline);
    } else {
      first.cv.wait_until(lk, deadline);
    }
  }
  forget();
  lk.unlock();
  std::vector<Bytes> bodies(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    Bytes& body = slots[i].body;
    const auto status = static_cast<Status>(slots[i].status);
    if (status == Status::kTimeout) {
      Reader r(body.data(), body.size());
      throw_store_timeout(*reqs[i].keys, Millis(r.i64()), fmt::format("TcpStore {}", peer_));
    }
    if (status == Status::kInvalid) throw InvalidArgument(std::string(body.begin(), body.end()));
    if (status == Status::kError) {
      const std::string msg(body.begin(), body.end());
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
    bodies[i] = std::move(body);
  }
  return bodies;
}

void StoreConnection::fail_all(const std::string& why) {
  if (!broken_) {
    broken_ = true;
    broken_reason_ = why;
  }
  notify_all_slots();
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
  // Small replies are parsed out of a staging buffer; a reply whose body is larger than that
  // buffer is received straight into its own body (no copy on the way to the caller).
  std::vector<Delivery> got;
  std::string failure;
  bool rejected = false;
  if (stage_.empty()) stage_.resize(kStageBytes);
  for (int round = 0; round < 64 && failure.empty(); ++round) {
    ssize_t n;
    if (in_body_) {
      n = recv(fd_, body_.data() + body_got_, body_.size() - body_got_, MSG_DONTWAIT);
    } else {
      if (stage_off_ > 0) {
        std::memmove(stage_.data(), stage_.data() + stage_off_, stage_end_ - stage_off_);
        stage_end_ -= stage_off_;
        stage_off_ = 0;
      }
      n = recv(fd_, stage_.data() + stage_end_, stage_.size() - stage_end_, MSG_DONTWAIT);
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      failure = net::lost_message(
          peer_, n == 0 ? "the server closed the connection" : std::string(std::strerror(errno)));
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // drained
    }
    if (in_body_) {
      body_got_ += static_cast<size_t>(n);
      if (body_got_ == body_.size()) {
        got.push_back({cur_id_, cur_status_, std::move(body_)});
        body_ = Bytes();
        in_body_ = false;
      }
      continue;
    }
    stage_end_ += static_cast<size_t>(n);
    while (stage_end_ - stage_off_ >= kReplyHead) {
      const uint8_t* h = stage_.data() + stage_off_;
      const uint32_t len = store_wire::decode_u32(h);
      if (len > max_ + 16 || len < 5) {
        failure = fmt::format(
            "a reply frame of {} bytes is outside max_message_bytes ({}); raise "
            "TcpStoreOptions::max_message_bytes on every rank",
            len, max_);
        break;
      }
      const uint32_t id = store_wire::decode_u32(h + 4);
      const uint8_t status = h[8];
      const size_t body_len = len - 5;
      const size_t have = stage_end_ - stage_off_ - kReplyHead;
      if (have >= body_len) {
        Bytes body(h + kReplyHead, h + kReplyHead + body_len);
        stage_off_ += kReplyHead + body_len;
        if (id == store_wire::kAuthId && status == static_cast<uint8_t>(Status::kError)) {
          std::lock_guard<std::mutex> lk(mu_);
          if (!slots_.count(id)) {
            // The server cut this connection off before it knew which request broke a limit (a
            // frame over max_message_bytes, a stalled request, a full buffer): every caller
            // hears it.
            failure.assign(body.begin(), body.end());
            rejected = true;
            break;
          }
        }
        got.push_back({id, status, std::move(body)});
        continue;
      }
      if (body_len > kStageBytes / 2) {
        body_.resize(body_len);
        std::memcpy(body_.data(), h + kReplyHead, have);
        body_got_ = have;
        cur_id_ = id;
        cur_status_ = status;
        in_body_ = true;
        stage_off_ = stage_end_ = 0;
      }
      break;
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  for (Delivery& d : got) {
    auto it = slots_.find(d.id);
    if (it == slots_.end() || it->second->done) continue;  // a caller that gave up
    it->second->status = d.status;
    it->second->body = std::move(d.body);
    it->second->done = true;
    it->second->cv.notify_all();
  }
  if (!failure.empty()) {
    rejected_ = rejected_ || rejected;
    fail_all(failure);
  }
}

}  // namespace collie
