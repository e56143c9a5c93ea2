#pragma once
// TcpStoreServer: the TcpStore's server. One thread runs an epoll event loop serving every
// client; GET, WAIT and MULTI_GET on missing keys park the connection (no polling) until the
// keys appear or the request's deadline passes. The data lives in a HashStore, so every store
// has exactly HashStore's semantics.
// Lifetime: the constructor binds and starts the thread (throws NetworkError if it cannot bind);
// the destructor stops the loop and closes every connection, so clients still waiting get
// NetworkError. Not copyable; port() is safe from any thread.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace collie {

class TcpStoreServer {
 public:
  // port 0 = pick a free port (see port()). Requests larger than max_message_bytes are answered
  // with an error and the connection is closed, without allocating the request.
  TcpStoreServer(const std::string& host, uint16_t port, size_t max_message_bytes);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  uint16_t port_ = 0;
};

}  // namespace collie
