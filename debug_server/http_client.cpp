#include "debug_server/http_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "core/clock.h"

namespace collie::http {
namespace {

constexpr auto kCancelPoll = std::chrono::milliseconds(50);

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class Exchange {
 public:
  explicit Exchange(const GetRequest& r)
      : r_(r),
        url_(r.host.find(':') != std::string::npos
                 ? fmt::format("http://[{}]:{}{}", r.host, r.port, r.target)
                 : fmt::format("http://{}:{}{}", r.host, r.port, r.target)) {}

  Reply run() {
    connect_any();
    // An IPv6 literal goes in brackets, or the port would read as part of the address.
    const bool v6 = r_.host.find(':') != std::string::npos;
    std::string req = fmt::format("GET {} HTTP/1.1\r\nHost: {}{}{}:{}\r\nConnection: close\r\n",
                                  r_.target, v6 ? "[" : "", r_.host, v6 ? "]" : "", r_.port);
    for (const auto& [k, v] : r_.headers) req += fmt::format("{}: {}\r\n", k, v);
    req += "\r\n";
    send_all(req);
    return read_response();
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error(fmt::format("{} ({})", why, url_));
  }

  // Waits for `events` on `fd` in slices, so a cancel is seen within kCancelPoll.
  void wait_for(int fd, short events, const char* doing) {
    for (;;) {
      if (r_.cancel != nullptr && r_.cancel->load()) fail(fmt::format("cancelled while {}", doing));
      const auto left = r_.deadline - Clock::system().now();
      if (left <= Clock::TimePoint::duration::zero()) {
        fail(fmt::format("no answer by the deadline while {}", doing));
      }
      const auto slice = std::min<Clock::TimePoint::duration>(left, kCancelPoll);
      pollfd p{fd, events, 0};
      const int n = ::poll(
          &p, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
      if (n > 0) return;
      if (n < 0 && errno != EINTR) fail(fmt::format("poll failed: {}", std::strerror(errno)));
    }
  }

  // The system resolver's own timeouts bound the lookup; a rank publishes an IP literal or a
  // name from /etc/hosts or the cluster's DNS.
  void connect_any() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(r_.port);
    const int rc = ::getaddrinfo(r_.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) fail(fmt::format("cannot resolve {}: {}", r_.host, ::gai_strerror(rc)));
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(res, ::freeaddrinfo);
    std::string last = "no address";
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      Fd f;
      f.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (f.fd < 0) {
        last = std::strerror(errno);
        continue;
      }
      if (::connect(f.fd, a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS && errno != EINTR) {  // EINTR: it goes on, as EINPROGRESS
          last = std::strerror(errno);
          continue;
        }
        wait_for(f.fd, POLLOUT, "connecting");
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(f.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          last = std::strerror(err);
          continue;
        }
      }
      std::swap(s_.fd, f.fd);
      return;
    }
    fail(fmt::format("cannot connect: {}", last));
  }

  void send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(s_.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        wait_for(s_.fd, POLLOUT, "sending the request");
      } else {
        fail(fmt::format("sending the request failed: {}", std::strerror(errno)));
      }
    }
  }

  // Appends what arrives to *buf, at most `room` bytes; false once the peer has closed.
  bool receive(std::string* buf, size_t room, const char* doing) {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::recv(s_.fd, chunk, std::min(sizeof chunk, std::max<size_t>(room, 1)), 0);
      if (n > 0) {
        buf->append(chunk, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno != EAGAIN && errno != EINTR) {
        fail(fmt::format("reading failed while {}: {}", doing, std::strerror(errno)));
      }
      wait_for(s_.fd, POLLIN, doing);
    }
  }

  Reply read_response() {
    std::string in;
    size_t end = std::string::npos;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      if (in.size() > kMaxHeadBytes + 4) {
        fail(fmt::format("response head larger than {} bytes", kMaxHeadBytes));
      }
      if (!receive(&in, kMaxHeadBytes + 4 - in.size() + 1, "reading the response head")) {
        fail("connection closed before the response head ended");
      }
    }
    Reply res;
    const ParseResult p =
        parse_response_head(std::string_view(in).substr(0, end), r_.max_body_bytes, &res);
    if (p.status != 0) fail(fmt::format("bad response: {}", p.error));
    res.body = in.substr(end + 4);
    const size_t want = res.has_length ? res.content_length : r_.max_body_bytes + 1;
    while (res.body.size() < want) {
      if (!receive(&res.body, want - res.body.size(), "reading the response body")) break;
    }
    if (res.has_length) {
      if (res.body.size() < res.content_length) {
        fail(fmt::format("connection closed after {} of {} body bytes", res.body.size(),
                         res.content_length));
      }
      res.body.resize(res.content_length);  // bytes past it are not this response's
    } else if (res.body.size() > r_.max_body_bytes) {
      fail(fmt::format("response body larger than {} bytes", r_.max_body_bytes));
    }
    return res;
  }

  const GetRequest& r_;
  const std::string url_;
  Fd s_;
};

}  // namespace

Reply get(const GetRequest& req) { return Exchange(req).run(); }

}  // namespace collie::http
