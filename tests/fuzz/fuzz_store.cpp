// libFuzzer target: the TcpStore server (store/tcp_store_server.h) fed arbitrary byte streams
// by a client over a real loopback connection, the way a hostile local process would. Two real
// servers run for the whole session, one with a secret; the first input byte picks which. Each
// input is one connection: send the bytes, half-close, read until the server closes. The server
// must never crash (ASan/UBSan abort), hang (no EOF within 5 s traps), stop serving (a fresh
// client's PING must still succeed every 256 inputs), or hold more than its max_store_bytes
// (checked after every input: the size cap's accounting must follow what is stored).
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/log.h"
#include "store/socket_util.h"
#include "store/tcp_store_protocol.h"
#include "store/tcp_store_server.h"

namespace {

using namespace std::chrono_literals;

struct Servers {
  Servers() {
    collie::set_log_level(collie::LogLevel::Error);
    l.max_message_bytes = 64 * 1024;
    l.max_store_bytes = 4u << 20;
    l.max_total_buffered_bytes = 8u << 20;
    l.handshake_timeout = 2000ms;
    l.partial_frame_timeout = 2000ms;
    open = std::make_unique<collie::TcpStoreServer>("127.0.0.1", 0, l, "");
    locked = std::make_unique<collie::TcpStoreServer>("127.0.0.1", 0, l, "fuzz-secret");
  }
  collie::TcpStoreLimits l;
  std::unique_ptr<collie::TcpStoreServer> open, locked;
};

Servers& servers() {
  static Servers s;
  return s;
}

// Sends `n` bytes, half-closes, and drains replies until EOF; false when the server neither
// answers nor closes within 5 s. EINTR is retried: libFuzzer's -timeout SIGALRM (every
// timeout/2 + 1 s) interrupts a send or recv that has a socket timeout, and was misread as a hang.
bool exchange(uint16_t port, const uint8_t* p, size_t n) {
  const int fd = collie::net::connect_with_retry("127.0.0.1", port, collie::Millis(5000));
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  auto interrupted = [&] { return errno == EINTR && std::chrono::steady_clock::now() < deadline; };
  while (n > 0) {
    const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && interrupted()) continue;
    if (k <= 0) break;  // the server may cut a bad client off mid-stream
    p += k;
    n -= static_cast<size_t>(k);
  }
  shutdown(fd, SHUT_WR);
  uint8_t buf[65536];
  bool ok = false;
  for (;;) {
    const ssize_t k = recv(fd, buf, sizeof(buf), 0);
    if (k > 0 || (k < 0 && interrupted())) continue;
    ok = k == 0 || errno == ECONNRESET;
    break;
  }
  close(fd);
  return ok;
}

void ping(uint16_t port, const char* secret) {
  collie::store_wire::Writer a, p;
  a.u8(static_cast<uint8_t>(collie::store_wire::Op::kAuth)).u32(0).str(secret);
  p.u8(static_cast<uint8_t>(collie::store_wire::Op::kPing)).u32(1);
  const int fd = collie::net::connect_with_retry("127.0.0.1", port, collie::Millis(5000));
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  // AUTH is answered id 0, OK + the server's "secret required" byte; PING id 1, OK alone.
  uint32_t id = 0;
  for (auto [w, len] : {std::pair{&a, 6}, std::pair{&p, 5}}) {
    const auto& f = w->finish();
    collie::net::send_all(fd, f.data(), f.size(), deadline, "fuzz");
    uint8_t reply[10];
    collie::net::recv_all(fd, reply, 4 + len, deadline, "fuzz");  // len, id, status [+ flag]
    if (reply[0] != len || reply[4] != id || reply[8] != 0) __builtin_trap();
    ++id;
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static uint64_t runs = 0;
  Servers& s = servers();
  const bool use_locked = size > 0 && (data[0] & 1);
  collie::TcpStoreServer& server = use_locked ? *s.locked : *s.open;
  if (size > 0) {
    ++data;
    --size;
  }
  if (!exchange(server.port(), data, size)) __builtin_trap();         // hung: no reply, no close
  if (server.stored_bytes() > s.l.max_store_bytes) __builtin_trap();  // the cap was bypassed
  if (++runs % 256 == 0) {
    try {
      ping(s.open->port(), "");
      ping(s.locked->port(), "fuzz-secret");
    } catch (...) {
      __builtin_trap();  // the server stopped serving
    }
  }
  return 0;
}
