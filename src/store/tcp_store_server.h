#pragma once
// TcpStoreServer: the TcpStore's server. One thread runs an epoll event loop serving every
// client; GET, WAIT and MULTI_GET on missing keys park the connection (no polling) until the
// keys appear or the request's deadline passes. The data lives in a HashStore, so every store
// has exactly HashStore's semantics.
//
// Hostile clients (issue 17): with a secret configured, a connection's first frame must be an
// AUTH carrying it (compared in constant time, the frame bounded to a few KiB before it is
// read); anything else is answered "store authentication failed ..." and the connection closed.
// Every connection's buffered input and unsent replies are capped (a client streaming while its
// GET waits, or not reading its replies, is cut off), so is their sum over all clients, the
// size of any value (APPEND past max_message_bytes) and of the whole data set; a frame begun
// must complete within partial_frame_timeout; an unauthenticated connection must authenticate
// within handshake_timeout. Each violation: one error reply naming the limit, then disconnect.
//
// Lifetime: the constructor binds and starts the thread (throws NetworkError if it cannot bind);
// the destructor stops the loop and closes every connection, so clients still waiting get
// NetworkError. Not copyable; port() is safe from any thread.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/export.h"

namespace collie {

struct TcpStoreLimits {
  // Largest request or reply frame (payload bytes).
  size_t max_message_bytes = 64u << 20;
  // Per-connection cap on buffered input + unsent replies; 0 = max_message_bytes + 1 MiB.
  size_t max_connection_bytes = 0;
  // Cap on the sum of every connection's buffers.
  size_t max_total_buffered_bytes = 1u << 30;
  // Cap on the stored keys + values.
  size_t max_store_bytes = 1u << 30;
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds partial_frame_timeout{30000};
  // A connection with nothing in flight for this long is closed; 0 = never (the default: ranks
  // keep their store client open through long quiet phases).
  std::chrono::milliseconds idle_timeout{0};
};

class COLLIE_API TcpStoreServer {
 public:
  // port 0 = pick a free port (see port()). An empty secret = no authentication.
  TcpStoreServer(const std::string& host, uint16_t port, const TcpStoreLimits& limits,
                 std::string secret);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const { return port_; }
  // Bytes of the stored keys plus values, as the max_store_bytes cap counts them; never above
  // the cap. Thread-safe.
  size_t stored_bytes() const;

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
  uint16_t port_ = 0;
};

}  // namespace collie
