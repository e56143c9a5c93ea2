#include "probes/host_capacity.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "discovery/bind_address.h"
#include "store/socket_util.h"

namespace collie::probes {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

int accept_before(int listen_fd, net::Deadline deadline) {
  while (true) {
    const int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd >= 0) return fd;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      throw std::runtime_error(fmt::format("accept: {}", std::strerror(errno)));
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::system().now())
            .count();
    if (left <= 0) throw std::runtime_error("accept: timed out");
    pollfd p{listen_fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left));
  }
}

}  // namespace

double loopback_tcp_gbps(int64_t bytes, int messages, Millis deadline_in, std::string* error) {
  const auto deadline = Clock::system().now() + deadline_in;
  const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  std::vector<double> samples;
  try {
    uint16_t port = 0;
    Fd listener{net::listen_on("127.0.0.1", 0, &port)};
    Fd client{net::connect_with_retry("127.0.0.1", port, deadline_in)};
    Fd server{accept_before(listener.fd, deadline)};
    net::set_nodelay(server.fd);
    const std::string peer = fmt::format("127.0.0.1:{} (loopback)", port);
    // The receiver: reads each message whole, then acks it with one byte. Ends with the sender's
    // connection (a closed connection or the deadline throws; the sender then fails too).
    std::thread receiver([&, fd = server.fd] {
      std::vector<uint8_t> in(n);
      uint8_t ack = 1;
      try {
        for (int i = 0; i < messages + 1; ++i) {
          net::recv_all(fd, in.data(), n, deadline, peer);
          net::send_all(fd, &ack, 1, deadline, peer);
        }
      } catch (const std::exception&) {
        ::shutdown(fd, SHUT_RDWR);
      }
    });
    std::vector<uint8_t> out(n, 0x5a);
    uint8_t ack = 0;
    std::string err;
    try {
      for (int i = 0; i < messages + 1; ++i) {
        const auto t0 = Clock::system().now();
        net::send_all(client.fd, out.data(), n, deadline, peer);
        net::recv_all(client.fd, &ack, 1, deadline, peer);
        const double s = std::chrono::duration<double>(Clock::system().now() - t0).count();
        if (i > 0 && s > 0) samples.push_back(static_cast<double>(n) / s / 1e9);
      }
    } catch (const std::exception& e) {
      err = e.what();
      ::shutdown(client.fd, SHUT_RDWR);
    }
    receiver.join();
    if (!err.empty()) throw std::runtime_error(err);
  } catch (const std::exception& e) {
    *error = e.what();
    return 0;
  }
  return samples.empty() ? 0 : median(samples);
}

double interface_line_gbps(const std::string& iface, const std::string& sysfs) {
  if (iface.empty() || iface.find('/') != std::string::npos || iface == "." || iface == "..")
    return 0;
  std::ifstream in(sysfs + "/class/net/" + iface + "/speed");
  long long mbps = 0;
  if (!(in >> mbps) || mbps <= 0) return 0;   // reading it fails with EINVAL when unknown
  return static_cast<double>(mbps) / 8000.0;  // Mb/s -> GB/s
}

std::string data_interface(const std::string& backend, const Env& env,
                           const std::string& store_host) {
  if (backend != "gloo") return "";
  try {
    return choose_gloo_bind(env, store_host).iface;
  } catch (const std::exception&) {
    return "";  // the backend itself reports a bad setting
  }
}

HostCapacity measure_host_capacity(const std::string& backend, const Env& env,
                                   const std::string& store_host, int64_t bytes, int messages,
                                   Millis deadline) {
  HostCapacity c;
  c.iface = data_interface(backend, env, store_host);
  c.line_gbps = interface_line_gbps(c.iface);
  std::string error;
  c.loopback_gbps = loopback_tcp_gbps(bytes, messages, deadline, &error);
  if (!error.empty())
    log(LogLevel::Warning, "pairwise: loopback bandwidth not measured (capacity unknown): {}",
        error);
  return c;
}

}  // namespace collie::probes
