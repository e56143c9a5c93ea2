#include "debug_server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/worker_thread.h"

namespace collie::http {
namespace {

using Steady = std::chrono::steady_clock;

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// One non-blocking attempt to send a short answer before closing (the I/O thread never blocks).
void answer_and_close(int fd, const Response& res) {
  const std::string out = serialize(res);
  [[maybe_unused]] ssize_t n = send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(fd, SHUT_WR);
  close(fd);
}

}  // namespace

std::string serialize(const Response& res) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
      "Connection: close\r\n",
      res.status, reason_phrase(res.status), res.content_type, res.body.size());
  for (const auto& [k, v] : res.headers) out += k + ": " + v + "\r\n";
  out += "\r\n";
  out += res.body;
  return out;
}

struct Server::Impl {
  struct Conn {
    int fd = -1;
    std::string buf;
    Steady::time_point deadline;
    size_t head_end = 0;  // offset past CRLFCRLF once the head is complete
    ServerRequest req;
  };
  struct Job {
    int fd;
    ServerRequest req;
  };

  int listen_fd = -1;
  int epfd = -1;
  int wake_fd = -1;
  WorkerThread io;                                     // collie-http: accepts and reads requests
  std::vector<std::unique_ptr<WorkerThread>> workers;  // collie-http-w: serve and write answers
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;
  bool stopping = false;
  std::unordered_map<int, Conn> conns;  // I/O thread only
};

Server::Server(ServerOptions opts) : opts_(opts), impl_(std::make_unique<Impl>()) {
  if (opts_.threads < 1) opts_.threads = 1;
}

Server::~Server() { stop(); }

void Server::route(const std::string& method, const std::string& path, Handler h) {
  routes_.emplace_back(method, path, std::move(h));
}

int Server::bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return -1;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  const int bound = ss.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  impl_->listen_fd = fd;
  return bound;
}

void Server::serve(ServerRequest& req, Response& res) {
  try {
    if (filter_ && filter_(req, res)) return;
    bool path_known = false;
    for (auto& [method, path, handler] : routes_) {
      if (path != req.path) continue;
      path_known = true;
      if (method == req.method) return handler(req, res);
    }
    res.status = path_known ? 405 : 404;
    if (error_) error_(req, res, "");
  } catch (const std::exception& e) {
    res = Response{};
    res.status = 500;
    if (error_) error_(req, res, e.what());
  }
}

void Server::start() {
  Impl& m = *impl_;
  m.epfd = epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = m.listen_fd;
  epoll_ctl(m.epfd, EPOLL_CTL_ADD, m.listen_fd, &ev);
  ev.data.fd = m.wake_fd;
  epoll_ctl(m.epfd, EPOLL_CTL_ADD, m.wake_fd, &ev);

  auto reject = [this](int fd, ServerRequest& req, int status, const std::string& why) {
    Response res;
    res.status = status;
    if (error_) error_(req, res, why);
    answer_and_close(fd, res);
  };
  auto drop = [&m](int fd) {
    epoll_ctl(m.epfd, EPOLL_CTL_DEL, fd, nullptr);
    m.conns.erase(fd);
  };
  auto enqueue = [this, &m, reject, drop](Impl::Conn& c) {
    const int fd = c.fd;
    ServerRequest req = std::move(c.req);
    drop(fd);
    std::unique_lock<std::mutex> lk(m.mu);
    if (static_cast<int>(m.queue.size()) >= opts_.max_queue) {
      lk.unlock();
      return reject(fd, req, 503, "server busy: too many requests waiting");
    }
    m.queue.push_back({fd, std::move(req)});
    m.cv.notify_one();
  };
  // Reads what arrived; hands the request on once complete, rejects it when it is bad.
  auto on_readable = [this, reject, drop, enqueue](Impl::Conn& c) {
    char buf[16 * 1024];
    const size_t cap = kMaxHeadBytes + 4 + opts_.max_body;
    for (;;) {
      const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        const int fd = c.fd;
        drop(fd);
        close(fd);
        return;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      c.buf.append(buf, static_cast<size_t>(n));
      if (c.buf.size() > cap) break;
    }
    if (c.head_end == 0) {
      const size_t end = c.buf.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (c.buf.size() > kMaxHeadBytes + 4) {
          const int fd = c.fd;
          ServerRequest req = std::move(c.req);
          drop(fd);
          return reject(fd, req, 431, "request line and headers too large");
        }
        return;
      }
      const ParseResult p =
          parse_head(std::string_view(c.buf).substr(0, end), opts_.max_body, &c.req);
      if (p.status != 0) {
        const int fd = c.fd;
        ServerRequest req = std::move(c.req);
        drop(fd);
        return reject(fd, req, p.status, p.error);
      }
      c.head_end = end + 4;
    }
    if (c.buf.size() - c.head_end < c.req.content_length) return;
    c.req.body = c.buf.substr(c.head_end, c.req.content_length);
    if (c.req.get_header_value("content-type").rfind("application/x-www-form-urlencoded", 0) == 0) {
      parse_params(c.req.body, &c.req.params);
    }
    enqueue(c);
  };

  m.io.start("collie-http", [this, &m, reject, drop, on_readable] {
    epoll_event events[64];
    for (;;) {
      int timeout = -1;
      const auto now = Steady::now();
      for (const auto& [fd, c] : m.conns) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(c.deadline - now).count();
        const int t = static_cast<int>(std::max<int64_t>(0, left));
        if (timeout < 0 || t < timeout) timeout = t;
      }
      const int n = epoll_wait(m.epfd, events, 64, timeout);
      if (n < 0 && errno != EINTR) break;
      bool stop = false;
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == m.wake_fd) {
          stop = true;
        } else if (fd == m.listen_fd) {
          for (;;) {
            const int cfd = accept4(m.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (cfd < 0) break;
            if (static_cast<int>(m.conns.size()) >= opts_.max_connections) {
              // Full of connections still sending: drop the oldest one (a real client sends
              // its request at once, so whoever is still sending is the slowest), not the new.
              auto oldest = m.conns.begin();
              for (auto it = m.conns.begin(); it != m.conns.end(); ++it) {
                if (it->second.deadline < oldest->second.deadline) oldest = it;
              }
              const int ofd = oldest->first;
              ServerRequest req = std::move(oldest->second.req);
              drop(ofd);
              reject(ofd, req, 503, "server busy: too many connections; yours was the slowest");
            }
            const int one = 1;
            setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            Impl::Conn c;
            c.fd = cfd;
            c.deadline = Steady::now() + opts_.request_timeout;
            c.req.remote_addr = peer_address(cfd);
            m.conns.emplace(cfd, std::move(c));
            epoll_event cev{};
            cev.events = EPOLLIN | EPOLLRDHUP;
            cev.data.fd = cfd;
            epoll_ctl(m.epfd, EPOLL_CTL_ADD, cfd, &cev);
          }
        } else {
          auto it = m.conns.find(fd);
          if (it != m.conns.end()) on_readable(it->second);
        }
      }
      if (stop) break;
      // Requests not complete by their deadline: 408, then closed.
      const auto t = Steady::now();
      std::vector<int> late;
      for (const auto& [fd, c] : m.conns) {
        if (c.deadline <= t) late.push_back(fd);
      }
      for (int fd : late) {
        ServerRequest req = std::move(m.conns[fd].req);
        drop(fd);
        reject(fd, req, 408,
               fmt::format("request not received within {} ms", opts_.request_timeout.count()));
      }
    }
    for (auto& [fd, c] : m.conns) close(fd);
    m.conns.clear();
  });

  for (int i = 0; i < opts_.threads; ++i) {
    m.workers.push_back(std::make_unique<WorkerThread>("collie-http-w", [this, &m] {
      for (;;) {
        Impl::Job job;
        {
          std::unique_lock<std::mutex> lk(m.mu);
          m.cv.wait(lk, [&] { return m.stopping || !m.queue.empty(); });
          if (m.stopping) return;
          job = std::move(m.queue.front());
          m.queue.pop_front();
        }
        const int flags = fcntl(job.fd, F_GETFL);
        fcntl(job.fd, F_SETFL, flags & ~O_NONBLOCK);
        const auto us =
            std::chrono::duration_cast<std::chrono::microseconds>(opts_.write_timeout).count();
        timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
        setsockopt(job.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        Response res;
        job.req.fd = job.fd;
        serve(job.req, res);
        const std::string out = serialize(res);
        size_t off = 0;
        while (off < out.size()) {
          const ssize_t k = send(job.fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
          if (k < 0 && errno == EINTR) continue;
          if (k <= 0) break;
          off += static_cast<size_t>(k);
        }
        shutdown(job.fd, SHUT_WR);
        close(job.fd);
      }
    }));
  }
}

void Server::stop() {
  Impl& m = *impl_;
  if (m.wake_fd >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(m.wake_fd, &one, sizeof(one));
  }
  m.io.stop();  // woken by the eventfd above
  {
    std::lock_guard<std::mutex> lk(m.mu);
    m.stopping = true;
    for (auto& j : m.queue) close(j.fd);
    m.queue.clear();
  }
  m.cv.notify_all();
  for (auto& w : m.workers) w->stop();  // woken by `stopping` above
  m.workers.clear();
  if (m.listen_fd >= 0) close(m.listen_fd);
  if (m.wake_fd >= 0) close(m.wake_fd);
  if (m.epfd >= 0) close(m.epfd);
  m.listen_fd = m.wake_fd = m.epfd = -1;
}

}  // namespace collie::http
