#include "debug_server/http_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/deadline.h"

namespace collie::http {
namespace {

constexpr auto kCancelPoll = std::chrono::milliseconds(50);

using Steady = std::chrono::steady_clock;

}  // namespace

Exchange::Exchange(GetRequest req)
    : req_(std::move(req)),
      // An IPv6 literal goes in brackets, or the port would read as part of the address.
      url_(req_.host.find(':') != std::string::npos
               ? fmt::format("http://[{}]:{}{}", req_.host, req_.port, req_.target)
               : fmt::format("http://{}:{}{}", req_.host, req_.port, req_.target)) {}

Exchange::~Exchange() { close_fd(); }

void Exchange::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Exchange::fail(const std::string& why) {
  close_fd();
  error_ = fmt::format("{} ({})", why, url_);
  reply_ = Reply{};
  state_ = State::kDone;
}

const char* Exchange::doing() const {
  switch (state_) {
    case State::kIdle:
    case State::kConnecting:
      return "connecting";
    case State::kSending:
      return "sending the request";
    case State::kHead:
      return "reading the response head";
    default:
      return "reading the response body";
  }
}

short Exchange::wants() const {
  switch (state_) {
    case State::kConnecting:
    case State::kSending:
      return POLLOUT;
    case State::kHead:
    case State::kBody:
      return POLLIN;
    default:
      return 0;
  }
}

void Exchange::expire(const std::string& why) {
  if (done()) return;
  timed_out_ = why.empty();
  fail(why.empty() ? fmt::format("no answer by the deadline while {}", doing())
                   : fmt::format("{} while {}", why, doing()));
}

void Exchange::start() {
  if (state_ != State::kIdle) return;
  // A literal needs no resolver; a name goes through the system's (its own timeouts bound it):
  // ranks publish an IP literal or a name from /etc/hosts or the cluster's DNS.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(req_.port);
  int rc = ::getaddrinfo(req_.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    hints.ai_flags = AI_NUMERICSERV;
    rc = ::getaddrinfo(req_.host.c_str(), port.c_str(), &hints, &res);
  }
  if (rc != 0) return fail(fmt::format("cannot resolve {}: {}", req_.host, ::gai_strerror(rc)));
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
    sockaddr_storage ss{};
    std::memcpy(&ss, a->ai_addr, a->ai_addrlen);
    addrs_.push_back(ss);
    addr_lens_.push_back(a->ai_addrlen);
  }
  ::freeaddrinfo(res);
  const bool v6 = req_.host.find(':') != std::string::npos;
  out_ = fmt::format("GET {} HTTP/1.1\r\nHost: {}{}{}:{}\r\nConnection: close\r\n", req_.target,
                     v6 ? "[" : "", req_.host, v6 ? "]" : "", req_.port);
  for (const auto& [k, v] : req_.headers) out_ += fmt::format("{}: {}\r\n", k, v);
  out_ += "\r\n";
  state_ = State::kConnecting;
  connect_next();
}

// Tries the next resolved address; fails with the last error once none is left.
void Exchange::connect_next() {
  for (; next_addr_ < addrs_.size(); ++next_addr_) {
    close_fd();
    const auto* sa = reinterpret_cast<const sockaddr*>(&addrs_[next_addr_]);
    fd_ = ::socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      last_connect_error_ = std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd_, sa, addr_lens_[next_addr_]) == 0) {
      ++next_addr_;
      state_ = State::kSending;
      return send_some();
    }
    if (errno == EINPROGRESS || errno == EINTR) {  // EINTR: it goes on, as EINPROGRESS
      ++next_addr_;
      state_ = State::kConnecting;
      return;
    }
    last_connect_error_ = std::strerror(errno);
  }
  fail(fmt::format("cannot connect: {}", last_connect_error_));
}

void Exchange::on_ready() {
  switch (state_) {
    case State::kConnecting: {
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err == EINPROGRESS || err == EALREADY) return;
      if (err != 0) {
        last_connect_error_ = std::strerror(err);
        return connect_next();
      }
      state_ = State::kSending;
      return send_some();
    }
    case State::kSending:
      return send_some();
    case State::kHead:
    case State::kBody:
      return read_some();
    default:
      return;
  }
}

void Exchange::send_some() {
  while (sent_ < out_.size()) {
    const ssize_t n = ::send(fd_, out_.data() + sent_, out_.size() - sent_, MSG_NOSIGNAL);
    if (n > 0) {
      sent_ += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    } else {
      return fail(fmt::format("sending the request failed: {}", std::strerror(errno)));
    }
  }
  state_ = State::kHead;
}

// Reads what is there (never more than the head or body may still take, plus one byte to see
// an overrun), then moves on as far as the bytes allow.
void Exchange::read_some() {
  char chunk[65536];
  for (;;) {
    size_t room = sizeof chunk;
    if (state_ == State::kBody) {
      const size_t want = reply_.has_length ? reply_.content_length : req_.max_body_bytes + 1;
      room = want > reply_.body.size() ? want - reply_.body.size() : 1;
    }
    const ssize_t n = ::recv(fd_, chunk, std::min(sizeof chunk, room), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return fail(fmt::format("reading failed while {}: {}", doing(), std::strerror(errno)));
    }
    if (n == 0) {
      if (state_ == State::kHead) return fail("connection closed before the response head ended");
      return finish_body(true);
    }
    if (state_ == State::kHead) {
      in_.append(chunk, static_cast<size_t>(n));
      if (!head_complete()) {
        if (done()) return;
        continue;
      }
    } else {
      reply_.body.append(chunk, static_cast<size_t>(n));
    }
    finish_body(false);
    if (done()) return;
  }
}

// True once the head has been read and parsed (what followed it starts the body).
bool Exchange::head_complete() {
  const size_t end = in_.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (in_.size() > kMaxHeadBytes + 4) {
      fail(fmt::format("response head larger than {} bytes", kMaxHeadBytes));
    }
    return false;
  }
  const ParseResult p =
      parse_response_head(std::string_view(in_).substr(0, end), req_.max_body_bytes, &reply_);
  if (p.status != 0) {
    fail(fmt::format("bad response: {}", p.error));
    return false;
  }
  reply_.body = in_.substr(end + 4);
  in_.clear();
  state_ = State::kBody;
  return true;
}

// Done once the body is whole (Content-Length), or the peer closed (no length), or too large.
void Exchange::finish_body(bool closed) {
  if (reply_.has_length) {
    if (reply_.body.size() >= reply_.content_length) {
      reply_.body.resize(reply_.content_length);  // bytes past it are not this response's
    } else if (closed) {
      return fail(fmt::format("connection closed after {} of {} body bytes", reply_.body.size(),
                              reply_.content_length));
    } else {
      return;
    }
  } else if (reply_.body.size() > req_.max_body_bytes) {
    return fail(fmt::format("response body larger than {} bytes", req_.max_body_bytes));
  } else if (!closed) {
    return;
  }
  close_fd();
  state_ = State::kDone;
}

void run_all(std::vector<Exchange*> exchanges, const OnDone& on_done) {
  std::vector<Exchange*> ended;
  std::vector<int> gone;  // cancel_fds whose peer went away
  auto is_gone = [&gone](int fd) {
    return fd >= 0 && std::find(gone.begin(), gone.end(), fd) != gone.end();
  };
  auto start = [&ended, &is_gone](const std::vector<Exchange*>& xs) {
    for (Exchange* x : xs) {
      // What a cancelled request asks in its place (a node's fallback) is not even connected.
      if (is_gone(x->request().cancel_fd)) {
        x->expire("cancelled: the request it served was abandoned by its client");
      } else {
        x->start();
      }
      if (x->done()) ended.push_back(x);
    }
  };
  start(exchanges);
  std::vector<pollfd> fds;
  std::vector<Exchange*> live;
  for (;;) {
    // Exchanges that ended since the last round: their callbacks may add more.
    while (!ended.empty()) {
      Exchange* x = ended.back();
      ended.pop_back();
      if (!on_done) continue;
      std::vector<Exchange*> more = on_done(x);
      exchanges.insert(exchanges.end(), more.begin(), more.end());
      start(more);
    }
    fds.clear();
    live.clear();
    const auto now = Steady::now();
    auto next = Steady::time_point::max();
    for (Exchange* x : exchanges) {
      if (x->done()) continue;
      const std::atomic<bool>* cancel = x->request().cancel;
      if (cancel != nullptr && cancel->load()) {
        x->expire("cancelled");
        ended.push_back(x);
        continue;
      }
      if (is_gone(x->request().cancel_fd)) {
        x->expire("cancelled: the request it served was abandoned by its client");
        ended.push_back(x);
        continue;
      }
      if (x->request().deadline <= now) {
        x->expire();
        ended.push_back(x);
        continue;
      }
      next = std::min(next, cancel != nullptr ? std::min(x->request().deadline, now + kCancelPoll)
                                              : x->request().deadline);
      fds.push_back(pollfd{x->fd(), x->wants(), 0});
      live.push_back(x);
    }
    if (!ended.empty()) continue;
    // Drop what ended long ago, so a long run does not rescan it.
    exchanges = live;
    if (live.empty()) return;
    // After the exchanges' own: each distinct cancel_fd, for its peer's FIN or reset only.
    for (Exchange* x : live) {
      const int cfd = x->request().cancel_fd;
      if (cfd < 0) continue;
      bool listed = false;
      for (size_t i = live.size(); i < fds.size(); ++i) listed = listed || fds[i].fd == cfd;
      if (!listed) fds.push_back(pollfd{cfd, POLLRDHUP, 0});
    }
    const int n = ::poll(fds.data(), fds.size(), poll_timeout_ms(next, now));
    if (n < 0 && errno != EINTR) {
      const std::string why = fmt::format("poll failed: {}", std::strerror(errno));
      for (Exchange* x : live) {
        x->expire(why);
        ended.push_back(x);
      }
      continue;
    }
    for (size_t i = live.size(); n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) gone.push_back(fds[i].fd);
    }
    for (size_t i = 0; n > 0 && i < live.size(); ++i) {
      if (fds[i].revents == 0) continue;
      live[i]->on_ready();
      if (live[i]->done()) ended.push_back(live[i]);
    }
  }
}

std::vector<std::unique_ptr<Exchange>> get_many(std::vector<GetRequest> reqs) {
  std::vector<std::unique_ptr<Exchange>> xs;
  std::vector<Exchange*> ptrs;
  for (auto& r : reqs) {
    xs.push_back(std::make_unique<Exchange>(std::move(r)));
    ptrs.push_back(xs.back().get());
  }
  run_all(ptrs);
  return xs;
}

Reply get(const GetRequest& req) {
  Exchange x(req);
  run_all({&x});
  if (!x.ok()) throw std::runtime_error(x.error());
  return x.take_reply();
}

}  // namespace collie::http
