#pragma once
// TcpStoreServer: the TcpStore's server. One thread runs an epoll event loop serving every
// client; GET, WAIT and MULTI_GET on missing keys, and gathers, park the request (no polling)
// until the keys appear, the gather completes or the request's deadline passes. A parked request
// does not hold up its connection's later requests (replies carry the request's id), so every
// thread of a rank shares one connection. What a request does, and what it costs at N clients,
// is store/store_engine.h; the data lives in a HashStore, so every store has exactly HashStore's
// semantics.
//
// Out of descriptors (EMFILE) the server takes the next client with a descriptor kept in
// reserve, answers it one error line naming the open-files limit and closes it: a client is
// never left waiting on a server that cannot accept it, and the loop never spins.
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
  // Bytes of the stored keys plus values and gathers, as the max_store_bytes cap counts them;
  // never above the cap. Thread-safe.
  size_t stored_bytes() const;

  // Counters since start (the scale benchmark's and the operator's view). Thread-safe.
  struct Stats {
    uint64_t requests = 0;               // request frames handled
    uint64_t bytes_in = 0;               // read from clients
    uint64_t bytes_out = 0;              // written to clients
    uint64_t connections = 0;            // open now
    uint64_t peak_connections = 0;       // most open at once
    uint64_t refused_no_descriptor = 0;  // clients turned away out of descriptors (EMFILE)
    uint64_t parked = 0;                 // requests parked now (waits, gathers)
    uint64_t wait_steps = 0;  // key-wait registrations made, notified or unlinked (O(K) each)
    size_t stored_bytes = 0;
  };
  Stats stats() const;

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
  uint16_t port_ = 0;
};

}  // namespace collie
