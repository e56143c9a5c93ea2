// store_bench: TcpStore throughput (set / get / add) with 1, 16, 128 concurrent clients against
// a server on loopback, next to a raw TCP echo of the same message size with the same number of
// clients (blocking socket, one server thread per connection): the floor any request/response
// store can reach on this machine. Usage: store_bench [seconds_per_cell] [value_bytes] [clients...]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "store/socket_util.h"
#include "store/tcp_store.h"

namespace {

using collie::Bytes;
using collie::TcpStore;
using collie::TcpStoreOptions;
using Steady = std::chrono::steady_clock;

struct Cell {
  double ops_per_s = 0;
  double us_per_op = 0;  // mean latency seen by one client
};

// Runs `op(client, i)` on `clients` threads for `seconds`; counts completed operations.
template <typename Client>
Cell measure(std::vector<std::unique_ptr<Client>>& cs, double seconds,
             const std::function<void(Client&, int)>& op) {
  const int n = static_cast<int>(cs.size());
  std::atomic<bool> stop{false};
  std::atomic<int64_t> total{0};
  std::barrier start(n + 1);
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&, i] {
      start.arrive_and_wait();
      int64_t done = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        op(*cs[i], i);
        ++done;
      }
      total += done;
    });
  }
  start.arrive_and_wait();
  const auto t0 = Steady::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts) t.join();
  const double el = std::chrono::duration<double>(Steady::now() - t0).count();
  Cell c;
  c.ops_per_s = static_cast<double>(total.load()) / el;
  c.us_per_op = c.ops_per_s > 0 ? 1e6 * n / c.ops_per_s : 0;
  return c;
}

// The raw baseline: a blocking echo of `bytes`-byte messages.
class EchoServer {
 public:
  explicit EchoServer(size_t bytes) : bytes_(bytes) {
    fd_ = collie::net::listen_on("127.0.0.1", 0, &port_);
    const int flags = fcntl(fd_, F_GETFL);
    fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        collie::net::set_nodelay(c);
        workers_.emplace_back([this, c] {
          std::vector<char> buf(bytes_);
          for (;;) {
            size_t got = 0;
            while (got < bytes_) {
              const ssize_t r = recv(c, buf.data() + got, bytes_ - got, 0);
              if (r <= 0) {
                close(c);
                return;
              }
              got += static_cast<size_t>(r);
            }
            if (send(c, buf.data(), bytes_, MSG_NOSIGNAL) < 0) {
              close(c);
              return;
            }
          }
        });
      }
    });
  }
  ~EchoServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    acceptor_.join();
    for (auto& w : workers_) w.join();
  }
  uint16_t port() const { return port_; }

 private:
  size_t bytes_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

struct EchoClient {
  EchoClient(uint16_t port, size_t bytes) : buf(bytes, 'x') {
    fd = collie::net::connect_with_retry("127.0.0.1", port, std::chrono::seconds(10));
  }
  ~EchoClient() { close(fd); }
  void round_trip() {
    const auto dl = Steady::now() + std::chrono::seconds(10);
    collie::net::send_all(fd, reinterpret_cast<uint8_t*>(buf.data()), buf.size(), dl, "echo");
    collie::net::recv_all(fd, reinterpret_cast<uint8_t*>(buf.data()), buf.size(), dl, "echo");
  }
  int fd;
  std::string buf;
};

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  const size_t value_bytes = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 64;
  std::vector<int> counts;
  for (int i = 3; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1, 16, 128};
  // A SET request carries op, key and value plus framing: echo the same number of bytes.
  const size_t msg_bytes = value_bytes + 32;

  std::printf(
      "# collie store_bench: TcpStore on 127.0.0.1, %zu-byte values, %.1f s per cell, "
      "%u CPUs\n",
      value_bytes, seconds, std::thread::hardware_concurrency());
  std::printf(
      "# raw echo = blocking TCP echo of %zu bytes, one server thread per client; "
      "vs raw = ops/s divided by raw echo round trips/s\n",
      msg_bytes);
  std::printf("%8s  %6s  %12s  %10s  %7s\n", "clients", "op", "ops/s", "us/op", "vs raw");
  const Bytes value(value_bytes, 'v');
  for (int n : counts) {
    Cell raw;
    {
      EchoServer echo(msg_bytes);
      std::vector<std::unique_ptr<EchoClient>> cs;
      for (int i = 0; i < n; ++i)
        cs.push_back(std::make_unique<EchoClient>(echo.port(), msg_bytes));
      raw = measure<EchoClient>(cs, seconds, [](EchoClient& c, int) { c.round_trip(); });
    }
    TcpStoreOptions so;
    so.is_server = true;
    TcpStore server(so);
    TcpStoreOptions co;
    co.port = server.port();
    std::vector<std::unique_ptr<TcpStore>> cs;
    for (int i = 0; i < n; ++i) cs.push_back(std::make_unique<TcpStore>(co));
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back(fmt::format("bench/{}", i));
    struct Row {
      const char* name;
      std::function<void(TcpStore&, int)> op;
    };
    const Row rows[] = {
        {"set", [&](TcpStore& s, int i) { s.set(keys[i], value); }},
        {"get", [&](TcpStore& s, int i) { s.get(keys[i]); }},
        {"add", [&](TcpStore& s, int) { s.add("bench/counter", 1); }},
    };
    std::printf("%8d  %6s  %12.0f  %10.1f  %7s\n", n, "raw", raw.ops_per_s, raw.us_per_op, "1.00");
    for (const auto& row : rows) {
      const Cell c = measure<TcpStore>(cs, seconds, row.op);
      std::printf("%8d  %6s  %12.0f  %10.1f  %7.2f\n", n, row.name, c.ops_per_s, c.us_per_op,
                  raw.ops_per_s > 0 ? c.ops_per_s / raw.ops_per_s : 0.0);
    }
    std::fflush(stdout);
  }
  return 0;
}
