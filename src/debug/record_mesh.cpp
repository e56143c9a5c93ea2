#include "debug/record_mesh.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "core/deadline.h"
#include "core/error.h"
#include "store/socket_util.h"
#include "store/store.h"
#include "store/store_secret.h"

namespace collie {
namespace {

constexpr std::array<uint8_t, 4> kMagic = {'C', 'L', 'R', 'M'};
constexpr size_t kTokenBytes = 64;                               // new_store_secret(): 64 hex chars
constexpr size_t kHelloBytes = kMagic.size() + 4 + kTokenBytes;  // magic, rank (LE), token

std::string key_of(const std::string& tag, int rank) { return fmt::format("{}/{}", tag, rank); }

std::vector<uint8_t> hello(int rank, const std::string& token) {
  std::vector<uint8_t> h(kMagic.begin(), kMagic.end());
  for (int i = 0; i < 4; ++i)
    h.push_back(static_cast<uint8_t>(static_cast<uint32_t>(rank) >> (8 * i)));
  h.insert(h.end(), token.begin(), token.end());
  return h;
}

// The rank a hello frame claims when it carries `token`, else -1.
int hello_rank(const uint8_t* h, const std::string& token) {
  if (!std::equal(kMagic.begin(), kMagic.end(), h)) return -1;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>(h[kMagic.size() + i]) << (8 * i);
  const std::string_view given(reinterpret_cast<const char*>(h) + kMagic.size() + 4, kTokenBytes);
  if (!constant_time_equal(token, given)) return -1;
  return r > (1u << 30) ? -1 : static_cast<int>(r);
}

std::string list_ranks(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// A connection accepted but not yet identified by its hello frame.
struct Pending {
  int fd;
  std::vector<uint8_t> buf;
};

}  // namespace

RecordMesh::RecordMesh(int rank, int size, size_t record_bytes)
    : rank_(rank), size_(size), record_bytes_(record_bytes), fds_(static_cast<size_t>(size), -1) {}

RecordMesh::~RecordMesh() { close(); }

void RecordMesh::close() {
  for (int& fd : fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  broken_ = true;
}

std::unique_ptr<RecordMesh> RecordMesh::connect(std::shared_ptr<Store> store,
                                                const std::string& tag, int rank, int size,
                                                size_t record_bytes, const std::string& bind_host,
                                                Millis timeout) {
  if (rank < 0 || rank >= size || record_bytes == 0) {
    throw InvalidArgument(
        fmt::format("RecordMesh: rank {} of {} with {}-byte records", rank, size, record_bytes));
  }
  std::unique_ptr<RecordMesh> m(new RecordMesh(rank, size, record_bytes));
  if (size == 1) return m;
  const auto deadline = Clock::system().now() + timeout;
  uint16_t port = 0;
  const int listen_fd = net::listen_on(bind_host, 0, &port);
  struct CloseListen {
    int fd;
    ~CloseListen() { ::close(fd); }
  } close_listen{listen_fd};
  const std::string token = new_store_secret();
  store->set(key_of(tag, rank), to_bytes(fmt::format("{} {} {}", bind_host, port, token)));

  // Dial every lower rank (the kernel completes the connection before that rank accepts).
  for (int peer = 0; peer < rank; ++peer) {
    const Millis left(poll_timeout_ms(deadline));
    try {
      store->wait({key_of(tag, peer)}, std::max(left, Millis(1)));
      std::istringstream in(to_string(store->get(key_of(tag, peer))));
      std::string host, peer_token;
      int peer_port = 0;
      in >> host >> peer_port >> peer_token;
      if (!in || peer_port <= 0 || peer_port > 65535 || peer_token.size() != kTokenBytes) {
        throw NetworkError("its published address is malformed");
      }
      const int fd = net::connect_with_retry(host, static_cast<uint16_t>(peer_port),
                                             Millis(poll_timeout_ms(deadline)));
      m->fds_[static_cast<size_t>(peer)] = fd;
      const auto h = hello(rank, peer_token);
      net::send_all(fd, h.data(), h.size(), deadline, fmt::format("rank {}", peer));
    } catch (const Error& e) {
      throw NetworkError(fmt::format("record mesh '{}': rank {} could not connect to rank {}: {}",
                                     tag, rank, peer, e.what()));
    }
  }

  // Accept every higher rank; connections without this rank's token are dropped.
  int missing = size - 1 - rank;
  std::vector<Pending> pending;
  while (missing > 0) {
    std::vector<pollfd> pfds{{listen_fd, POLLIN, 0}};
    for (const Pending& p : pending) pfds.push_back({p.fd, POLLIN, 0});
    const int n = ::poll(pfds.data(), pfds.size(), poll_timeout_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      for (const Pending& p : pending) ::close(p.fd);
      std::vector<int> absent;
      for (int r = rank + 1; r < size; ++r) {
        if (m->fds_[static_cast<size_t>(r)] < 0) absent.push_back(r);
      }
      throw TimeoutError(fmt::format(
          "record mesh '{}': rank {} heard nothing from rank(s) {} within {} ms (did they "
          "reach this point? can they reach {}:{}?)",
          tag, rank, list_ranks(absent), timeout.count(), bind_host, port));
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
      if (done && who > rank && who < size && m->fds_[static_cast<size_t>(who)] < 0) {
        m->fds_[static_cast<size_t>(who)] = p.fd;
        --missing;
      } else if (got > 0 && !done) {
        continue;  // the rest of the hello is still on its way
      } else {
        ::close(p.fd);  // closed early, wrong token, or a rank already connected
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
  return m;
}

void RecordMesh::exchange(const uint8_t* out, uint8_t* in, Millis timeout) {
  if (broken_) {
    throw BackendError(
        "record mesh: unusable after an earlier failure (a record was late or a "
        "peer was lost)");
  }
  if (size_ == 1) return;
  const auto deadline = Clock::system().now() + timeout;
  const size_t rb = record_bytes_;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    try {
      net::send_all(fds_[static_cast<size_t>(p)], out + static_cast<size_t>(p) * rb, rb, deadline,
                    fmt::format("rank {}", p));
    } catch (const NetworkError& e) {
      broken_ = true;
      throw NetworkError(
          fmt::format("record mesh: rank {} could not send to rank {} ({})", rank_, p, e.what()));
    }
  }
  std::vector<size_t> got(static_cast<size_t>(size_), 0);
  got[static_cast<size_t>(rank_)] = rb;
  int left = size_ - 1;
  std::vector<pollfd> pfds;
  std::vector<int> who;
  bool polled = false;  // first try every socket without waiting: records often are there
  while (left > 0) {
    if (polled) {
      pfds.clear();
      who.clear();
      for (int p = 0; p < size_; ++p) {
        if (got[static_cast<size_t>(p)] < rb) {
          pfds.push_back({fds_[static_cast<size_t>(p)], POLLIN, 0});
          who.push_back(p);
        }
      }
      const int n = ::poll(pfds.data(), pfds.size(), poll_timeout_ms(deadline));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        broken_ = true;
        throw NetworkError(fmt::format("record mesh: poll: {}", std::strerror(errno)));
      }
      if (n == 0) fail_timeout(got, timeout);
    }
    for (size_t i = 0; i < (polled ? who.size() : static_cast<size_t>(size_)); ++i) {
      const int p = polled ? who[i] : static_cast<int>(i);
      size_t& have = got[static_cast<size_t>(p)];
      if (have == rb || (polled && !pfds[i].revents)) continue;
      const ssize_t r = ::recv(fds_[static_cast<size_t>(p)],
                               in + static_cast<size_t>(p) * rb + have, rb - have, MSG_DONTWAIT);
      if (r > 0) {
        have += static_cast<size_t>(r);
        if (have == rb) --left;
      } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        broken_ = true;
        throw NetworkError(fmt::format("record mesh: rank {} lost its connection to rank {} ({})",
                                       rank_, p,
                                       r == 0 ? "closed by the peer" : std::strerror(errno)));
      }
    }
    polled = true;
  }
}

void RecordMesh::fail_timeout(const std::vector<size_t>& got, Millis timeout) {
  broken_ = true;
  std::vector<int> late;
  for (int p = 0; p < size_; ++p) {
    if (got[static_cast<size_t>(p)] < record_bytes_) late.push_back(p);
  }
  throw TimeoutError(fmt::format("record mesh: rank {} got no record from rank(s) {} within {} ms",
                                 rank_, list_ranks(late), timeout.count()));
}

}  // namespace collie
