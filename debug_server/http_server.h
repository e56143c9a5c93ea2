#pragma once
// A small HTTP/1.1 server for the debug server, built so that slow or many clients cannot starve
// it (issue 17): one I/O thread reads every connection's request with epoll, each request bounded
// by a TOTAL deadline (not a per-read timeout a client can renew with one byte a second) and by
// size; only complete requests reach the bounded worker pool, which runs the handler and writes
// the response (write timeout), one request per connection (Connection: close). A connection
// beyond max_connections evicts the oldest one still sending (503); requests beyond the queue
// are answered 503 at once.
// Lifetime: bind() then start(); stop() (or the destructor) closes the socket and joins every
// thread. Routes and the filter must be installed before start(); handlers run on the workers.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "debug_server/http_request.h"

namespace collie::http {

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain";
  std::vector<std::pair<std::string, std::string>> headers;
  void set_content(std::string b, std::string type) {
    body = std::move(b);
    content_type = std::move(type);
  }
  void set_header(std::string k, std::string v) {
    headers.emplace_back(std::move(k), std::move(v));
  }
};

// What reaches the handlers: the parsed request plus where it came from.
struct ServerRequest : Request {
  std::string remote_addr;
  // The request's connection while its handler runs (-1 otherwise), only to notice that the
  // client went away (http::GetRequest::cancel_fd); the server reads, writes and closes it.
  int fd = -1;
};

using Handler = std::function<void(const ServerRequest&, Response&)>;
// Runs before routing; returns true when it answered the request itself (rejections).
using Filter = std::function<bool(const ServerRequest&, Response&)>;
// Answers 404/405 and handler exceptions.
using ErrorHandler = std::function<void(const ServerRequest&, Response&, const std::string& why)>;

struct ServerOptions {
  int threads = 4;
  std::chrono::milliseconds request_timeout{3000};  // whole request: line, headers and body
  std::chrono::milliseconds write_timeout{3000};
  size_t max_body = 64 * 1024;
  int max_connections = 128;  // connections still sending their request
  int max_queue = 64;         // complete requests waiting for a worker
};

class Server {
 public:
  explicit Server(ServerOptions opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void route(const std::string& method, const std::string& path, Handler h);
  void set_filter(Filter f) { filter_ = std::move(f); }
  void set_error_handler(ErrorHandler h) { error_ = std::move(h); }

  // Binds host:port (0 = ephemeral); returns the port, or -1 (errno kept) when it cannot bind.
  int bind(const std::string& host, int port);
  void start();
  void stop();

 private:
  struct Impl;
  void serve(ServerRequest& req, Response& res);
  ServerOptions opts_;
  std::vector<std::tuple<std::string, std::string, Handler>> routes_;
  Filter filter_;
  ErrorHandler error_;
  std::unique_ptr<Impl> impl_;
};

// The whole response as bytes (status line, headers, body); Connection: close.
std::string serialize(const Response& res);

}  // namespace collie::http
