#include "store/socket_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "core/deadline.h"
#include "core/error.h"

namespace collie::net {
namespace {

struct AddrInfo {
  addrinfo* head = nullptr;
  ~AddrInfo() {
    if (head) freeaddrinfo(head);
  }
};

void resolve(const std::string& host, uint16_t port, bool passive, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string service = std::to_string(port);
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &out.head);
  if (rc != 0) {
    throw NetworkError(
        fmt::format("cannot resolve store host '{}': {} (check MASTER_ADDR or the "
                    "tcp:// address)",
                    host, gai_strerror(rc)));
  }
}

// One non-blocking connect attempt bounded by the deadline; returns the fd or -1 with errno set.
int try_connect(const addrinfo* ai, Deadline deadline) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) return -1;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      const int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    const int n = poll(&p, 1, poll_timeout_ms(deadline));
    int err = 0;
    socklen_t len = sizeof(err);
    if (n <= 0) {
      err = n == 0 ? ETIMEDOUT : errno;
    } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
      err = errno;
    }
    if (err != 0) {
      close(fd);
      errno = err;
      return -1;
    }
  }
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  set_nodelay(fd);
  return fd;
}

}  // namespace

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

int listen_on(const std::string& host, uint16_t port, uint16_t* bound_port) {
  AddrInfo ai;
  resolve(host, port, true, ai);
  int last_errno = 0;
  for (addrinfo* a = ai.head; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    // The kernel caps the backlog at net.core.somaxconn; ask for plenty so that thousands of
    // ranks connecting at once are queued rather than refused.
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 16384) != 0) {
      last_errno = errno;
      close(fd);
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return fd;
  }
  throw NetworkError(fmt::format(
      "store server cannot listen on {}:{}: {} (is another job using the port? pick another "
      "MASTER_PORT, or 0 for a free one)",
      host, port, std::strerror(last_errno)));
}

int connect_with_retry(const std::string& host, uint16_t port, Millis timeout) {
  const auto start = Clock::system().now();
  const Deadline deadline = start + timeout;
  std::minstd_rand rng(std::random_device{}());
  auto backoff = std::chrono::milliseconds(10);
  int last_errno = 0;
  for (;;) {
    AddrInfo ai;
    resolve(host, port, false, ai);
    for (addrinfo* a = ai.head; a; a = a->ai_next) {
      int fd = try_connect(a, deadline);
      if (fd >= 0) return fd;
      last_errno = errno;
    }
    const auto now = Clock::system().now();
    if (now >= deadline) break;
    // Jitter spreads the retries of many ranks that all started at once.
    std::uniform_int_distribution<int64_t> jitter(backoff.count() / 2, backoff.count());
    auto sleep = std::chrono::milliseconds(jitter(rng));
    sleep = std::min<std::chrono::milliseconds>(
        sleep, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    std::this_thread::sleep_for(sleep);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(1));
  }
  const auto waited = std::chrono::duration_cast<Millis>(Clock::system().now() - start);
  throw NetworkError(fmt::format(
      "could not connect to the store at {}:{} within {} ms (last error: {}); check that rank 0 "
      "is running and that MASTER_ADDR/MASTER_PORT point at it",
      host, port, waited.count(), std::strerror(last_errno)));
}

std::string lost_message(const std::string& peer, std::string_view why) {
  return fmt::format(
      "lost the connection to the store at {}: {} (did the process hosting the store, usually "
      "rank 0, exit or crash?)",
      peer, why);
}

std::string no_reply_message(const std::string& peer) {
  return fmt::format(
      "waiting for a reply from the store at {} timed out; the server is alive but not answering "
      "(overloaded or stopped?)",
      peer);
}

namespace {

// Blocks until fd is ready for `events`; throws NetworkError when the deadline passes first.
void wait_ready(int fd, short events, Deadline deadline, const std::string& peer) {
  for (;;) {
    pollfd pf{fd, events, 0};
    const int r = poll(&pf, 1, poll_timeout_ms(deadline));
    if (r > 0) return;
    if (r == 0) {
      if (events != POLLOUT) throw NetworkError(no_reply_message(peer));
      throw NetworkError(
          fmt::format("sending to the store at {} timed out; the server is alive but not reading "
                      "(overloaded or stopped?)",
                      peer));
    }
    if (errno != EINTR) {
      throw NetworkError(
          fmt::format("poll on store connection {}: {}", peer, std::strerror(errno)));
    }
  }
}

[[noreturn]] void throw_lost(const std::string& peer, std::string_view why) {
  throw NetworkError(lost_message(peer, why));
}

bool retryable(int err) { return err == EINTR || err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

void send_all(int fd, const uint8_t* p, size_t n, Deadline deadline, const std::string& peer) {
  while (n > 0) {
    wait_ready(fd, POLLOUT, deadline, peer);
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (retryable(errno)) continue;
      throw_lost(peer, std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void recv_all(int fd, uint8_t* p, size_t n, Deadline deadline, const std::string& peer) {
  while (n > 0) {
    wait_ready(fd, POLLIN, deadline, peer);
    const ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
    if (got == 0) throw_lost(peer, "the server closed the connection");
    if (got < 0) {
      if (retryable(errno)) continue;
      throw_lost(peer, std::strerror(errno));
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
}

}  // namespace collie::net
