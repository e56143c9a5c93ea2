#pragma once
// The debug servers' HTTP client: GETs to addresses read from the store, whose other end is not
// trusted (a rank that hangs, or whatever is listening where a planted address points), many at
// once on one thread. Each GET is an Exchange, a non-blocking state machine (connect, send the
// request, read the head, read the body) that any event loop can drive through fd(), wants() and
// on_ready(): run_all() drives a batch with poll(2) (the live-status tree's nodes, the cluster
// view's detail fetches), the scale benchmark drives thousands from its own epoll loop.
// Everything is bounded by the caller: the whole exchange by one deadline, the head by
// http::kMaxHeadBytes and kMaxHeaderCount, the body by max_body_bytes, and run_all stops within
// 50 ms once `cancel` is set (the request it served ended). One connection per GET
// ("Connection: close"); no redirects, no chunked bodies. The response parser is
// http_request.h's, fuzzed by tests/fuzz/fuzz_http.cpp.
// Thread safety: an Exchange belongs to one thread at a time; get/get_many/run_all are
// reentrant; `cancel` may be set from any thread.
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "debug_server/http_request.h"

namespace collie::http {

struct GetRequest {
  std::string host;  // a name or an IP literal (no brackets)
  int port = 0;
  std::string target;  // origin-form: /path?query
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::steady_clock::time_point deadline;
  size_t max_body_bytes = 1 << 20;
  const std::atomic<bool>* cancel = nullptr;
  // A connected socket whose peer closing it (FIN or reset) cancels the exchange at once: the
  // connection of the request it serves, whose client gave up (run_all polls it for that
  // only; never reads, writes or closes it). -1: none.
  int cancel_fd = -1;
};

class Exchange {
 public:
  explicit Exchange(GetRequest req);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Resolves the host (an IP literal at once; a name through the system resolver, bounded by
  // its own timeouts) and starts connecting. Afterwards either done() or fd() >= 0.
  void start();
  int fd() const { return fd_; }
  // POLLIN or POLLOUT: what fd() must be ready for before on_ready(); 0 once done().
  short wants() const;
  // fd() is ready (or in error): makes what progress it can without blocking.
  void on_ready();
  // Ends it unless done: "no answer by the deadline while <step>" (or `why` instead).
  void expire(const std::string& why = "");
  bool done() const { return state_ == State::kDone; }
  bool ok() const { return done() && error_.empty(); }
  // Ended by its deadline (expire() without a reason), not by an error or an answer.
  bool timed_out() const { return timed_out_; }
  // When done: the response (status, headers, body) or, when !ok(), one line naming
  // http://host:port/target and why (cannot resolve, refused, no answer by the deadline,
  // cancelled, a head or body above its limit, a malformed or truncated response).
  const Reply& reply() const { return reply_; }
  Reply take_reply() { return std::move(reply_); }
  const std::string& error() const { return error_; }
  const GetRequest& request() const { return req_; }
  const std::string& url() const { return url_; }

 private:
  enum class State { kIdle, kConnecting, kSending, kHead, kBody, kDone };
  void fail(const std::string& why);
  void connect_next();
  void send_some();
  void read_some();
  bool head_complete();
  void finish_body(bool closed);
  const char* doing() const;
  void close_fd();

  GetRequest req_;
  std::string url_;
  State state_ = State::kIdle;
  int fd_ = -1;
  std::vector<sockaddr_storage> addrs_;
  std::vector<socklen_t> addr_lens_;
  size_t next_addr_ = 0;
  std::string last_connect_error_ = "no address";
  std::string out_;
  size_t sent_ = 0;
  std::string in_;
  Reply reply_;
  std::string error_;
  bool timed_out_ = false;
};

// Drives every exchange (started or not) until each is done: its deadline passed, `cancel`
// (from its request) set, the peer of its cancel_fd gone, or its answer read. One thread, one
// poll(2) over all of them. `on_done`, when given, is called once for each exchange as it ends and
// may return more to drive alongside (a tree node asking a silent child's children).
using OnDone = std::function<std::vector<Exchange*>(Exchange*)>;
void run_all(std::vector<Exchange*> exchanges, const OnDone& on_done = {});

// One GET per request, all at once (run_all); one result per request, in order.
std::vector<std::unique_ptr<Exchange>> get_many(std::vector<GetRequest> reqs);

// One GET. Throws std::runtime_error with the exchange's error line.
Reply get(const GetRequest& req);

}  // namespace collie::http
