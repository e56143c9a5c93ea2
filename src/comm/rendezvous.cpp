#include "comm/rendezvous.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "core/env.h"
#include "core/error.h"
#include "core/fd_limit.h"
#include "core/log.h"
#include "discovery/bind_address.h"
#include "discovery/launch_env.h"
#include "discovery/launcher_rendezvous.h"
#include "discovery/network_choices.h"
#include "store/file_store.h"
#include "store/store_secret.h"
#include "store/tcp_store.h"

namespace collie {
namespace {

uint16_t parse_port(std::string_view s, std::string_view what) {
  int port = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || p != s.data() + s.size() || port <= 0 || port > 65535) {
    throw InvalidArgument(fmt::format("{} '{}' is not a TCP port (1-65535)", what, s));
  }
  return static_cast<uint16_t>(port);
}

void resolve_rank_and_size(RendezvousRequest& req, const Env& env) {
  LaunchEnv le = detect_launch_env(env);
  if (req.rank < 0 && le.rank) req.rank = *le.rank;
  if (req.world_size < 0 && le.world_size) req.world_size = *le.world_size;
  if (req.world_size <= 0) {
    throw InvalidArgument(
        "world size unknown: pass it, or set WORLD_SIZE (or run under collie launch, mpirun or "
        "srun)");
  }
  if (req.rank < 0) {
    throw InvalidArgument("rank unknown: pass it, or set RANK (or run under a launcher)");
  }
  if (req.rank >= req.world_size) {
    throw InvalidArgument(
        fmt::format("rank {} is outside world size {}", req.rank, req.world_size));
  }
}

// Rank `serve`'s store binds the address choose_store_bind picks for `host`; clients dial `host`.
// Every store of the job uses the secret the environment gives (collie launch and the MPI
// bootstrap set one; a user exports one); a store served without one is said once, by the
// rank serving it.
std::shared_ptr<Store> tcp_store(const std::string& host, uint16_t port, bool serve, int world,
                                 Millis timeout, const Env& env) {
  TcpStoreOptions o;
  o.host = host;
  o.port = port;
  o.is_server = serve;
  o.timeout = timeout;
  o.secret = env.get(kStoreSecretEnv).value_or("");
  if (serve) {
    // One connection per rank, plus what the process itself and its other clients hold.
    require_fds(static_cast<uint64_t>(world) + 64,
                fmt::format("the store this process serves for {} ranks", world));
    const BindChoice b = choose_store_bind(host);
    o.bind_host = b.address;
    record_network_choice({"store_bind", fmt::format("{}:{}", b.address, port), b.reason});
    log(LogLevel::Info, "store: serving on {}:{} ({}); clients dial {}", b.address, port, b.reason,
        host);
  }
  auto store = std::make_shared<TcpStore>(o);
  if (serve && !store->members_only()) {
    log(LogLevel::Warning,
        "store: the job's store on port {} has no secret, so anyone who can reach it can rewrite "
        "its keys (rendezvous, debug_server/<rank>); export one {} to every rank (srun and "
        "torchrun pass it on), or start the job with collie launch or mpirun, which share one",
        store->port(), kStoreSecretEnv);
  }
  return store;
}

// A Slurm step's (or a torchrun job's) store: the serving task takes the first free candidate
// port and marks the store
// with the step id; the others try the candidates in turn until one answers with that id.
std::shared_ptr<Store> slurm_store(const RendezvousPlan& plan, int world, Millis timeout,
                                   const Env& env) {
  const std::string mark = "collie/job_id";
  if (plan.serve) {
    std::string last;
    for (uint16_t port : plan.ports) {
      try {
        auto s = tcp_store(plan.host, port, true, world, timeout, env);
        s->set(mark, to_bytes(plan.id));
        return s;
      } catch (const NetworkError& e) {
        last = e.what();  // port taken: next candidate
      }
    }
    throw NetworkError(
        fmt::format("{}: no free store port among {} on {} (last: {}); "
                    "set MASTER_ADDR and MASTER_PORT",
                    plan.id, fmt::join(plan.ports, ", "), plan.host, last));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (uint16_t port : plan.ports) {
      try {
        TcpStoreOptions o;
        o.host = plan.host;
        o.port = port;
        o.timeout = Millis(300);
        o.secret = env.get(kStoreSecretEnv).value_or("");
        TcpStore probe(o);
        if (probe.check({mark}) && to_string(probe.get(mark)) == plan.id) {
          o.timeout = timeout;
          return std::make_shared<TcpStore>(o);
        }
      } catch (const Error&) {
        // nothing there yet, or another service: try the next candidate
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw TimeoutError(fmt::format(
      "{}: no store of this job answered on {} ports {} within {} ms (did the task that serves "
      "it, on {}, start?); set COLLIE_INIT_METHOD=tcp://HOST:PORT to override",
      plan.id, plan.host, fmt::join(plan.ports, ", "), timeout.count(), plan.host));
}

}  // namespace

std::string format_ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j >= i + 2 ? fmt::format("{}-{}", ranks[i], ranks[j])
                      : (j == i + 1 ? fmt::format("{}, {}", ranks[i], ranks[j])
                                    : std::to_string(ranks[i]));
    i = j + 1;
  }
  return out;
}

void store_barrier(Store& store, const std::string& name, int rank, int world, Millis timeout) {
  Store::GatherResult r;
  try {
    r = store.gather(name + "/barrier", rank, world, {}, Store::GatherRead::kNone, timeout);
  } catch (const NetworkError&) {
    // The store's host (rank 0) gave up first and exited; it reports the missing ranks.
    throw TimeoutError(fmt::format(
        "[Rank {}] {}: not every rank arrived within {} ms, and the store host has already "
        "given up (rank 0's error names the missing ranks)",
        rank, name, timeout.count()));
  }
  if (r.complete) return;
  throw TimeoutError(fmt::format(
      "[Rank {}] {}: rank{} {} of {} did not arrive within {} ms (check that they started and "
      "can reach the store)",
      rank, name, r.missing.size() == 1 ? "" : "s", format_ranks(r.missing), world,
      timeout.count()));
}

Rendezvous rendezvous(const RendezvousRequest& in, const Env& env) {
  RendezvousRequest req = in;
  if (req.init_method.empty()) req.init_method = env.get("COLLIE_INIT_METHOD").value_or("env://");
  const std::string& m = req.init_method;
  // env:// decides where to meet first: its errors (an sbatch body, nothing set) say more than
  // "world size unknown" would.
  RendezvousPlan plan;
  if (m == "env://") {
    plan = plan_env_rendezvous(env);
    if (plan.kind == RendezvousPlan::Kind::SlurmAllocation ||
        plan.kind == RendezvousPlan::Kind::None) {
      throw InvalidArgument(fmt::format(
          "env:// needs MASTER_ADDR and MASTER_PORT ({}; collie launch, torchrun, srun and "
          "mpirun provide them or the equivalent; or use tcp://HOST:PORT)",
          plan.reason));
    }
  }
  resolve_rank_and_size(req, env);
  // Before anything connects: the open-files limit raised to the hard limit, and the store host
  // told in one line when its N connections cannot fit (serving_check in tcp_store).
  raise_fd_limit();
  Rendezvous out;
  out.rank = req.rank;
  out.world_size = req.world_size;
  if (m == "env://") {
    switch (plan.kind) {
      case RendezvousPlan::Kind::Explicit:
        out.store = tcp_store(plan.host, plan.ports.front(), req.rank == 0, req.world_size,
                              req.timeout, env);
        break;
      case RendezvousPlan::Kind::SlurmStep:
      case RendezvousPlan::Kind::TorchrunAgent:
        out.store = slurm_store(plan, req.world_size, req.timeout, env);
        break;
      case RendezvousPlan::Kind::Mpi:
        throw InvalidArgument(
            "env:// under mpirun needs MASTER_ADDR and MASTER_PORT: this build has no MPI "
            "backend to bootstrap the store with");
      case RendezvousPlan::Kind::SlurmAllocation:
      case RendezvousPlan::Kind::None:
        break;  // rejected above
    }
    out.store_host = plan.host;
    record_network_choice(
        {"rendezvous",
         fmt::format("env:// {}:{}", plan.host, dynamic_cast<TcpStore&>(*out.store).port()),
         plan.reason});
    log(LogLevel::Info, "rendezvous: env:// at {} ({})", plan.host, plan.reason);
    out.method = "env";
  } else if (m.rfind("tcp://", 0) == 0) {
    std::string hp = m.substr(6);
    auto colon = hp.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      throw InvalidArgument(fmt::format("init method '{}' must look like tcp://HOST:PORT", m));
    }
    std::string host = hp.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    out.store = tcp_store(host, parse_port(hp.substr(colon + 1), "port"), req.rank == 0,
                          req.world_size, req.timeout, env);
    out.store_host = host;
    record_network_choice({"rendezvous", m, "init method"});
    out.method = "tcp";
  } else if (m.rfind("file://", 0) == 0) {
    std::string path = m.substr(7);
    if (path.empty() || path[0] != '/') {
      throw InvalidArgument(
          fmt::format("init method '{}' must look like file:///ABSOLUTE/PATH", m));
    }
    out.store = std::make_shared<FileStore>(path, req.world_size, req.timeout);
    out.method = "file";
  } else {
    throw InvalidArgument(
        fmt::format("unknown init method '{}' (use env://, tcp://HOST:PORT or file:///PATH)", m));
  }
  if (!out.store_host.empty()) set_rendezvous_host(out.store_host);
  // Check in: claim the rank, agree on the world size, wait for everyone.
  Store& s = *out.store;
  if (s.add(fmt::format("rdzv/rank/{}", req.rank), 1) != 1) {
    throw InvalidArgument(fmt::format(
        "two processes claim rank {} (check RANK of each process, or remove a stale {})", req.rank,
        out.method == "file" ? "store file" : "job on the same port"));
  }
  const Bytes ws = to_bytes(std::to_string(req.world_size));
  const Bytes agreed = s.compare_set("rdzv/world_size", Bytes{}, ws);
  if (agreed != ws) {
    throw InvalidArgument(fmt::format("rank {} has world size {} but another rank has {}", req.rank,
                                      req.world_size, to_string(agreed)));
  }
  store_barrier(s, "rdzv/barrier", req.rank, req.world_size, req.timeout);
  return out;
}

}  // namespace collie
