#include "debug/agreement_tree.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "comm/rendezvous.h"
#include "core/deadline.h"
#include "core/error.h"
#include "store/socket_util.h"
#include "store/store.h"
#include "store/store_secret.h"

namespace collie {
namespace {

constexpr std::array<uint8_t, 4> kHelloMagic = {'C', 'L', 'A', 'T'};
constexpr size_t kTokenBytes = 64;  // new_store_secret(): 64 hex chars
constexpr size_t kHelloBytes = kHelloMagic.size() + 4 + kTokenBytes;  // magic, rank (LE), token
constexpr uint32_t kFrameMagic = 0x46544143;                          // "CATF"

enum Phase : uint8_t { kUp = 1, kAcross = 2, kDown = 3 };

// Every value travels behind this header; a frame out of step (another round or phase, another
// size) means the stream is broken.
struct FrameHeader {
  uint32_t magic;
  uint8_t phase;
  uint8_t pad[3];
  uint32_t len;
  uint32_t round;
};
static_assert(sizeof(FrameHeader) == 16);

std::string key_of(const std::string& tag, int rank) { return fmt::format("{}/{}", tag, rank); }

std::vector<uint8_t> hello(int rank, const std::string& token) {
  std::vector<uint8_t> h(kHelloMagic.begin(), kHelloMagic.end());
  for (int i = 0; i < 4; ++i) {
    h.push_back(static_cast<uint8_t>(static_cast<uint32_t>(rank) >> (8 * i)));
  }
  h.insert(h.end(), token.begin(), token.end());
  return h;
}

// The rank a hello frame claims when it carries `token`, else -1.
int hello_rank(const uint8_t* h, const std::string& token) {
  if (!std::equal(kHelloMagic.begin(), kHelloMagic.end(), h)) return -1;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>(h[kHelloMagic.size() + i]) << (8 * i);
  const std::string_view given(reinterpret_cast<const char*>(h) + kHelloMagic.size() + 4,
                               kTokenBytes);
  if (!constant_time_equal(token, given)) return -1;
  return r > (1u << 30) ? -1 : static_cast<int>(r);
}

// A connection accepted but not yet identified by its hello frame.
struct Pending {
  int fd;
  std::vector<uint8_t> buf;
};

int depth_of(int r) { return std::bit_width(static_cast<unsigned>(r) + 2) - 2; }

}  // namespace

struct AgreementTree::Transfer {
  int fd;
  int peer;  // group rank at the other end
  bool send;
  uint8_t phase;
  FrameHeader hdr;  // to send, or as received
  uint8_t* payload;
  size_t len;
  size_t done = 0;  // header and payload bytes moved so far
  bool complete() const { return done == sizeof(FrameHeader) + len; }
};

AgreementTree::AgreementTree(int rank, int size, std::vector<int> names)
    : rank_(rank), size_(size), names_(std::move(names)) {}

AgreementTree::~AgreementTree() { close(); }

void AgreementTree::close() {
  for (int* fd : {&up_fd_, &child_fd_[0], &child_fd_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  broken_ = true;
}

int AgreementTree::depth() const { return size_ <= 1 ? 0 : depth_of(size_ - 1); }

int AgreementTree::descriptors() const {
  return (up_fd_ >= 0) + (child_fd_[0] >= 0) + (child_fd_[1] >= 0);
}

std::vector<int> AgreementTree::below(int r, int size) {
  std::vector<int> out;
  for (int64_t lo = 2 * int64_t{r} + 2, hi = lo + 1; lo < size; lo = 2 * lo + 2, hi = 2 * hi + 3) {
    for (int64_t i = lo; i <= std::min<int64_t>(hi, size - 1); ++i) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

int AgreementTree::name(int r) const {
  return static_cast<size_t>(r) < names_.size() ? names_[static_cast<size_t>(r)] : r;
}

std::string AgreementTree::who(int r) const {
  std::vector<int> under = below(r, size_);
  if (r == parent_of(rank_) || (rank_ < 2 && r < 2)) {
    return fmt::format("rank {}", name(r));
  }
  for (int& u : under) u = name(u);
  if (under.empty()) return fmt::format("rank {}", name(r));
  return fmt::format("rank {} (and {} {} under it)", name(r), under.size() == 1 ? "rank" : "ranks",
                     format_ranks(under));
}

std::unique_ptr<AgreementTree> AgreementTree::connect(std::shared_ptr<Store> store,
                                                      const std::string& tag, int rank, int size,
                                                      const std::string& bind_host, Millis timeout,
                                                      std::vector<int> names) {
  if (rank < 0 || rank >= size) {
    throw InvalidArgument(fmt::format("AgreementTree: rank {} of {}", rank, size));
  }
  std::unique_ptr<AgreementTree> t(new AgreementTree(rank, size, std::move(names)));
  if (size == 1) return t;
  const auto deadline = Clock::system().now() + timeout;
  // Who dials this rank: its children, and rank 1 when this is rank 0.
  std::vector<int> expected;
  if (rank == 0) expected.push_back(1);
  for (int c : {2 * rank + 2, 2 * rank + 3}) {
    if (c < size) expected.push_back(c);
  }
  int listen_fd = -1;
  uint16_t port = 0;
  struct CloseListen {
    int& fd;
    ~CloseListen() {
      if (fd >= 0) ::close(fd);
    }
  } close_listen{listen_fd};
  const std::string token = new_store_secret();
  if (!expected.empty()) {
    try {
      listen_fd = net::listen_on(bind_host, 0, &port);
    } catch (const Error& e) {
      throw NetworkError(fmt::format("agreement tree '{}': rank {} cannot listen on {}: {}", tag,
                                     t->name(rank), bind_host, e.what()));
    }
    store->set(key_of(tag, rank), to_bytes(fmt::format("{} {} {}", bind_host, port, token)));
  }

  // Dial the parent (the kernel completes the connection before the parent accepts).
  if (rank > 0) {
    const int parent = parent_of(rank);
    try {
      store->wait({key_of(tag, parent)}, std::max(Millis(poll_timeout_ms(deadline)), Millis(1)));
      std::istringstream in(to_string(store->get(key_of(tag, parent))));
      std::string host, parent_token;
      int parent_port = 0;
      in >> host >> parent_port >> parent_token;
      if (!in || parent_port <= 0 || parent_port > 65535 || parent_token.size() != kTokenBytes) {
        throw NetworkError("its published address is malformed");
      }
      t->up_fd_ = net::connect_with_retry(host, static_cast<uint16_t>(parent_port),
                                          Millis(poll_timeout_ms(deadline)));
      const auto h = hello(rank, parent_token);
      net::send_all(t->up_fd_, h.data(), h.size(), deadline, fmt::format("rank {}", parent));
      net::set_nonblocking(t->up_fd_);
    } catch (const Error& e) {
      throw NetworkError(
          fmt::format("agreement tree '{}': rank {} could not connect to rank {}: {}", tag,
                      t->name(rank), t->name(parent), e.what()));
    }
  }

  // Accept the expected ranks; connections without this rank's token are dropped.
  size_t missing = expected.size();
  std::vector<Pending> pending;
  auto slot = [&](int who) -> int* {
    if (who == 1 && rank == 0) return &t->up_fd_;
    if (who == 2 * rank + 2) return &t->child_fd_[0];
    if (who == 2 * rank + 3) return &t->child_fd_[1];
    return nullptr;
  };
  while (missing > 0) {
    std::vector<pollfd> pfds{{listen_fd, POLLIN, 0}};
    for (const Pending& p : pending) pfds.push_back({p.fd, POLLIN, 0});
    const int n = ::poll(pfds.data(), pfds.size(), poll_timeout_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      for (const Pending& p : pending) ::close(p.fd);
      std::vector<int> absent;
      for (int r : expected) {
        if (*slot(r) < 0) absent.push_back(t->name(r));
      }
      throw TimeoutError(fmt::format(
          "agreement tree '{}': rank {} heard nothing from {} {} within {} ms (did they reach "
          "this point? can they reach {}:{}?)",
          tag, t->name(rank), absent.size() == 1 ? "rank" : "ranks", format_ranks(absent),
          timeout.count(), bind_host, port));
    }
    for (size_t i = pending.size(); i-- > 0;) {
      if (!(pfds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Pending& p = pending[i];
      uint8_t chunk[kHelloBytes];
      const ssize_t got = ::recv(p.fd, chunk, kHelloBytes - p.buf.size(), MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got > 0) p.buf.insert(p.buf.end(), chunk, chunk + got);
      const bool done = got > 0 && p.buf.size() == kHelloBytes;
      const int who = done ? hello_rank(p.buf.data(), token) : -1;
      int* fd = who >= 0 && who < size ? slot(who) : nullptr;
      if (fd != nullptr && *fd < 0) {
        *fd = p.fd;
        --missing;
      } else if (got > 0 && !done) {
        continue;  // the rest of the hello is still on its way
      } else {
        ::close(p.fd);  // closed early, wrong token, or not a rank this one expects
      }
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (pfds[0].revents & POLLIN) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        net::set_nodelay(fd);
        pending.push_back({fd, {}});
      }
    }
  }
  for (const Pending& p : pending) ::close(p.fd);
  t->children_ = (t->child_fd_[0] >= 0) + (t->child_fd_[1] >= 0);
  // Everyone who reads this rank's address has connected: the key can go.
  if (!expected.empty()) store->delete_key(key_of(tag, rank));
  return t;
}

namespace {

// Moves what it can of t's frame without blocking: 1 when bytes moved, 0 when none could move
// now, -1 when the peer closed the connection, -2 when the socket failed (errno says why).
int step(AgreementTree::Transfer& t) {
  iovec iov[2];
  int n = 0;
  auto* hdr = reinterpret_cast<uint8_t*>(&t.hdr);
  if (t.done < sizeof(FrameHeader)) {
    iov[n++] = {hdr + t.done, sizeof(FrameHeader) - t.done};
  }
  const size_t in_payload = t.done > sizeof(FrameHeader) ? t.done - sizeof(FrameHeader) : 0;
  if (t.len > in_payload) iov[n++] = {t.payload + in_payload, t.len - in_payload};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = static_cast<size_t>(n);
  const ssize_t r =
      t.send ? ::sendmsg(t.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) : ::recvmsg(t.fd, &m, MSG_DONTWAIT);
  if (r > 0) {
    t.done += static_cast<size_t>(r);
    return 1;
  }
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
  return r == 0 ? -1 : -2;
}

}  // namespace

void AgreementTree::advance(Transfer& t) {
  int r;
  do {
    r = step(t);
  } while (r == 1 && !t.complete());
  if (r >= 0) return;
  const int err = errno;
  // A reset is a close too: the peer closed with our frame still unread.
  if (r == -1 || err == ECONNRESET || err == EPIPE) {
    throw NetworkError(fmt::format(
        "agreement tree: rank {} closed its connection to rank {} (it exited, crashed, or gave up "
        "on an earlier check)",
        name(t.peer), name(rank_)));
  }
  throw NetworkError(fmt::format("agreement tree: rank {}'s connection to rank {} failed: {}",
                                 name(rank_), name(t.peer), std::strerror(err)));
}

void AgreementTree::run(Transfer* ts, int n, Clock::TimePoint deadline) {
  // Try every transfer at once first: the values are often there already.
  int left = 0;
  for (int i = 0; i < n; ++i) {
    advance(ts[i]);
    left += !ts[i].complete();
  }
  if (left == 0) return check_frames(ts, n);
  // Then, while recent waits were short, spin a little before sleeping in poll: a value that
  // comes within the budget is taken without the wake-up's latency.
  const auto waiting = std::chrono::steady_clock::now();
  if (spin_.count() > 0 && spin_skip_ == 0) {
    const auto spin_end = waiting + spin_;
    while (left > 0 && std::chrono::steady_clock::now() < spin_end) {
      for (int i = 0; i < n; ++i) {
        if (ts[i].complete()) continue;
        advance(ts[i]);
        left -= ts[i].complete();
      }
    }
  } else if (spin_skip_ > 0) {
    --spin_skip_;
  }
  pollfd pfds[3];
  int idx[3];
  while (left > 0) {
    int m = 0;
    for (int i = 0; i < n; ++i) {
      if (ts[i].complete()) continue;
      pfds[m] = {ts[i].fd, static_cast<short>(ts[i].send ? POLLOUT : POLLIN), 0};
      idx[m++] = i;
    }
    const int r = ::poll(pfds, static_cast<nfds_t>(m), poll_timeout_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw NetworkError(fmt::format("agreement tree: poll: {}", std::strerror(errno)));
    if (r == 0) fail_timeout(ts, n);
    for (int j = 0; j < m; ++j) {
      if (pfds[j].revents == 0) continue;
      advance(ts[idx[j]]);
      left -= ts[idx[j]].complete();
    }
  }
  // A wait longer than the budget (the peers were far behind, or the machine is shared by more
  // ranks than cores): stop spinning for a number of waits that doubles up to 1024; a short one
  // lets the next wait spin again.
  if (std::chrono::steady_clock::now() - waiting <= spin_) {
    spin_skip_ = 0;
    spin_backoff_ = 1;
  } else if (spin_skip_ == 0) {
    spin_skip_ = spin_backoff_;
    spin_backoff_ = std::min(2 * spin_backoff_, 1024);
  }
  check_frames(ts, n);
}

void AgreementTree::check_frames(Transfer* ts, int n) {
  for (int i = 0; i < n; ++i) {
    Transfer& t = ts[i];
    const uint64_t bytes = sizeof(FrameHeader) + t.len;
    if (t.send) {
      ++traffic_.frames_sent;
      traffic_.bytes_sent += bytes;
      continue;
    }
    ++traffic_.frames_received;
    traffic_.bytes_received += bytes;
    if (t.hdr.magic != kFrameMagic || t.hdr.phase != t.phase || t.hdr.len != t.len ||
        t.hdr.round != round_) {
      throw BackendError(fmt::format(
          "agreement tree: rank {} got a frame out of step from rank {} (round {} phase {} of {} "
          "bytes; expected round {} phase {} of {} bytes): a peer of another version?",
          name(rank_), name(t.peer), t.hdr.round, t.hdr.phase, t.hdr.len, round_, t.phase, t.len));
    }
  }
}

void AgreementTree::fail_timeout(const Transfer* ts, int n) {
  std::string late;
  for (int i = 0; i < n; ++i) {
    if (ts[i].complete()) continue;
    late += fmt::format("{}{} {}", late.empty() ? "" : "; ", ts[i].send ? "sending to" : "from",
                        who(ts[i].peer));
  }
  const auto waited = std::chrono::duration_cast<Millis>(Clock::system().now() - started_).count();
  throw TimeoutError(
      fmt::format("agreement tree: rank {} waited {} ms in vain ({})", name(rank_), waited, late));
}

void AgreementTree::allreduce(uint8_t* data, size_t len, uint8_t* scratch, Combine combine,
                              Clock::TimePoint deadline) {
  if (broken_) {
    throw BackendError(
        "agreement tree: unusable after an earlier failure (a value was late or a neighbour was "
        "lost)");
  }
  if (size_ == 1) return;
  ++round_;
  started_ = Clock::system().now();
  auto frame = [&](int fd, int peer, bool send, uint8_t phase, uint8_t* payload) {
    Transfer t{fd, peer, send, phase, {}, payload, len};
    if (send) t.hdr = {kFrameMagic, phase, {0, 0, 0}, static_cast<uint32_t>(len), round_};
    return t;
  };
  try {
    // Up: the children's subtotals.
    Transfer ts[2];
    for (int i = 0; i < children_; ++i) {
      ts[i] = frame(child_fd_[i], 2 * rank_ + 2 + i, false, kUp, scratch + i * len);
    }
    run(ts, children_, deadline);
    for (int i = 0; i < children_; ++i) combine(data, scratch + i * len, len);
    if (rank_ >= 2) {
      // Our subtotal up, the total down.
      Transfer up = frame(up_fd_, parent_of(rank_), true, kUp, data);
      run(&up, 1, deadline);
      Transfer down = frame(up_fd_, parent_of(rank_), false, kDown, data);
      run(&down, 1, deadline);
    } else if (up_fd_ >= 0) {
      // The roots swap their trees' subtotals (both at once: values larger than a socket's
      // buffer must not wait for each other).
      Transfer across[2] = {frame(up_fd_, 1 - rank_, true, kAcross, data),
                            frame(up_fd_, 1 - rank_, false, kAcross, scratch)};
      run(across, 2, deadline);
      combine(data, scratch, len);
    }
    for (int i = 0; i < children_; ++i) {
      ts[i] = frame(child_fd_[i], 2 * rank_ + 2 + i, true, kDown, data);
    }
    run(ts, children_, deadline);
  } catch (...) {
    close();
    throw;
  }
}

}  // namespace collie
