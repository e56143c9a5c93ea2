#pragma once
// Blocking-socket helpers shared by the TcpStore client and server. Every call that can block
// takes a deadline; all failures throw NetworkError naming host:port and what to check.
// Stateless and thread-safe.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/timeout.h"

namespace collie::net {

using Deadline = std::chrono::steady_clock::time_point;

// Binds and listens on host:port (port 0 = an ephemeral port) with a large backlog; returns the
// non-blocking listening fd and stores the bound port in *bound_port.
int listen_on(const std::string& host, uint16_t port, uint16_t* bound_port);

// Connects to host:port, retrying refused / unreachable attempts with exponential backoff and
// jitter until `timeout` has passed. Returns a blocking fd with TCP_NODELAY set.
int connect_with_retry(const std::string& host, uint16_t port, Millis timeout);

void set_nodelay(int fd);
void set_nonblocking(int fd);

// The NetworkError texts of a lost connection (`why`: what the socket said) and of a reply that
// did not come in time.
std::string lost_message(const std::string& peer, std::string_view why);
std::string no_reply_message(const std::string& peer);

// Sends or receives exactly n bytes before the deadline. On a closed connection, an I/O error or
// an expired deadline throws NetworkError mentioning `peer`.
void send_all(int fd, const uint8_t* p, size_t n, Deadline deadline, const std::string& peer);
void recv_all(int fd, uint8_t* p, size_t n, Deadline deadline, const std::string& peer);

}  // namespace collie::net
