#include "backends/mpi/self_rendezvous.h"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "backends/mpi/mpi_runtime.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "discovery/bind_address.h"
#include "discovery/net_route.h"
#include "discovery/network_choices.h"
#include "store/tcp_store.h"

namespace collie {
namespace {

// One fixed-size MPI_Bcast from rank 0: its addresses ("a,b,c"), the store port and the job's
// store secret.
struct Message {
  std::array<char, 512> hosts{};
  uint16_t port = 0;
  std::array<char, 128> secret{};
};

std::string random_secret() {
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 4; ++i) s += fmt::format("{:08x}", rd());
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t c = s.find(',', pos);
    if (c == std::string::npos) c = s.size();
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

// Rank 0's addresses, as others may dial them: the override, or every non-loopback address.
std::string published_hosts(const Env& env, bool single_host) {
  if (auto h = env.get("COLLIE_MPI_STORE_HOST"); h && !h->empty()) return *h;
  if (single_host) return "127.0.0.1";
  std::string out;
  for (const auto& a : net::interface_addresses()) {
    if (a.loopback || out.size() + a.address.size() + 1 >= sizeof(Message::hosts)) continue;
    out += (out.empty() ? "" : ",") + a.address;
  }
  return out.empty() ? "127.0.0.1" : out;
}

// The first of rank 0's addresses whose store answers, trying them in turn until `timeout`.
std::shared_ptr<TcpStore> connect_any(const std::vector<std::string>& hosts, uint16_t port,
                                      Millis timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (const auto& h : hosts) {
      try {
        TcpStoreOptions o;
        o.host = h;
        o.port = port;
        o.timeout = Millis(500);
        TcpStore probe(o);
        probe.ping();
        o.timeout = timeout;
        return std::make_shared<TcpStore>(o);
      } catch (const Error&) {
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw NetworkError(fmt::format(
      "mpi rendezvous: rank 0's store at port {} answered on none of its addresses {} within {} "
      "ms; set COLLIE_MPI_STORE_HOST (or MASTER_ADDR and MASTER_PORT) to an address this host "
      "can reach",
      port, fmt::join(hosts, ", "), timeout.count()));
}

}  // namespace

std::optional<SelfRendezvous> mpi_self_rendezvous(const Env& env, Millis timeout) {
  if (!under_mpi_launcher(env)) return std::nullopt;
  MpiRuntime& rt = MpiRuntime::get();
  const auto local_size = env.get_int("OMPI_COMM_WORLD_LOCAL_SIZE");
  const bool single_host = local_size && *local_size == rt.world_size();

  Message msg;
  std::shared_ptr<TcpStore> server;
  if (rt.world_rank() == 0) {
    std::string secret = env.get("COLLIE_STORE_SECRET").value_or("");
    if (secret.empty() || secret.size() >= msg.secret.size()) secret = random_secret();
    ::setenv("COLLIE_STORE_SECRET", secret.c_str(), 1);
    std::memcpy(msg.secret.data(), secret.data(), secret.size());
    TcpStoreOptions o;
    o.is_server = true;
    o.host = "127.0.0.1";  // rank 0's own client
    o.bind_host = single_host ? "127.0.0.1" : "0.0.0.0";
    o.timeout = timeout;
    server = std::make_shared<TcpStore>(o);
    const std::string hosts = published_hosts(env, single_host);
    std::strncpy(msg.hosts.data(), hosts.c_str(), msg.hosts.size() - 1);
    msg.port = server->port();
  }
  {
    auto lk = rt.lock();
    MPI_Bcast(&msg, static_cast<int>(sizeof(msg)), MPI_BYTE, 0, MPI_COMM_WORLD);
  }
  const std::string hosts(msg.hosts.data());
  SelfRendezvous out;
  out.rank = rt.world_rank();
  out.world_size = rt.world_size();
  if (server) {
    out.store = server;
    out.store_host = split(hosts).front();
  } else {
    ::setenv("COLLIE_STORE_SECRET", msg.secret.data(), 1);
    auto client = connect_any(split(hosts), msg.port, timeout);
    out.store_host = client->host();
    out.store = client;
  }
  record_network_choice({"rendezvous", fmt::format("mpi {}:{}", out.store_host, msg.port),
                         single_host ? "Open MPI, every rank on this host"
                                     : "Open MPI: rank 0's store address broadcast over MPI"});
  log(LogLevel::Info, "mpi self rendezvous: rank {}/{}, store {}:{} (rank 0 offered {})", out.rank,
      out.world_size, out.store_host, msg.port, hosts);
  return out;
}

}  // namespace collie
