#include "backends/mpi/self_rendezvous.h"

#include <unistd.h>

#include <array>
#include <cstring>

#include "backends/mpi/mpi_runtime.h"
#include "core/env.h"
#include "core/log.h"
#include "store/tcp_store.h"

namespace collie::mpi {

std::optional<SelfRendezvous> self_rendezvous(const Env& env, Millis timeout) {
  if (!under_mpi_launcher(env)) return std::nullopt;
  Runtime& rt = Runtime::get();
  const auto local_size = env.get_int("OMPI_COMM_WORLD_LOCAL_SIZE");
  const bool single_host = local_size && *local_size == rt.world_size();

  // Rank 0 broadcasts "host\0" + port; a fixed-size message keeps this to one MPI_Bcast.
  std::array<char, 256 + 2> msg{};
  std::shared_ptr<TcpStore> server;
  if (rt.world_rank() == 0) {
    TcpStoreOptions o;
    o.is_server = true;
    o.host = single_host ? "127.0.0.1" : "0.0.0.0";
    o.timeout = timeout;
    server = std::make_shared<TcpStore>(o);
    std::string host = env.get("COLLIE_MPI_STORE_HOST").value_or("");
    if (host.empty()) {
      char name[256] = {};
      host = single_host || gethostname(name, sizeof(name) - 1) != 0 ? "127.0.0.1" : name;
    }
    std::strncpy(msg.data(), host.c_str(), 255);
    const uint16_t port = server->port();
    std::memcpy(msg.data() + 256, &port, sizeof(port));
  }
  {
    auto lk = rt.lock();
    MPI_Bcast(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  }
  SelfRendezvous out;
  out.rank = rt.world_rank();
  out.world_size = rt.world_size();
  if (server) {
    out.store = server;
  } else {
    TcpStoreOptions o;
    o.host = std::string(msg.data());
    std::memcpy(&o.port, msg.data() + 256, sizeof(o.port));
    o.timeout = timeout;
    out.store = std::make_shared<TcpStore>(o);
  }
  log(LogLevel::Info, "mpi self rendezvous: rank {}/{}, store {}:{}", out.rank, out.world_size,
      msg.data(), server ? server->port() : 0);
  return out;
}

}  // namespace collie::mpi
