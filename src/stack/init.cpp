#include "stack/init.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <set>

#include "comm/registry.h"
#include "comm/rendezvous.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/printable.h"
#include "discovery/launcher_rendezvous.h"
#include "discovery/network_choices.h"
#include "stack/membership.h"
#include "stack/stack.h"
#include "store/prefix_store.h"

namespace collie {
namespace {

// Group ids must match across ranks; like torch, they come from the order of new_group calls.
std::atomic<int> g_next_group_id{1};

const BackendRegistration& lookup(const std::string& name) {
  if (const auto* b = find_backend(name)) return *b;
  std::string known;
  for (const auto* b : backends()) known += (known.empty() ? "" : ", ") + b->name;
  if (std::string why = backend_unavailable_reason(name); !why.empty()) throw InvalidArgument(why);
  throw InvalidArgument(fmt::format("unknown backend {} (built: {})", quote(name), known));
}

Millis default_timeout(const Env& env) {
  if (auto v = env.get("COLLIE_TIMEOUT"); v && !v->empty()) return parse_duration(*v);
  return kDefaultTimeout;
}

std::shared_ptr<ProcessGroup> create(const BackendRegistration& reg, GroupInfo info,
                                     const Env& env) {
  BackendArgs args{std::move(info), &env};
  return build_stack(reg.create(args), args);
}

}  // namespace

std::optional<SelfRendezvous> launcher_self_rendezvous(const BackendRegistration& reg,
                                                       const std::string& init_method,
                                                       const Env& env, Millis timeout) {
  if (!init_method.empty()) return std::nullopt;
  std::optional<SelfRendezvous> self;
  if (reg.self_rendezvous) {
    self = reg.self_rendezvous(env, timeout);
  } else if (plan_env_rendezvous(env).kind == RendezvousPlan::Kind::Mpi) {
    // mpirun with nothing set and a backend that needs a store: bootstrap it over MPI.
    if (const auto* mpi = find_backend("mpi"); mpi && mpi->self_rendezvous) {
      self = mpi->self_rendezvous(env, timeout);
    }
  }
  if (self && !self->store_host.empty()) set_rendezvous_host(self->store_host);
  return self;
}

std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& opts) {
  const Env& env = opts.env ? *opts.env : Env::process();
  configure_logging_from_env(env);
  const BackendRegistration& reg = lookup(opts.backend);
  const Millis timeout = opts.timeout == kUseGroupTimeout ? default_timeout(env) : opts.timeout;

  Rendezvous rdzv;
  std::string method = opts.init_method;
  if (method.empty()) method = env.get("COLLIE_INIT_METHOD").value_or("");
  if (opts.store) {
    if (opts.rank < 0 || opts.world_size <= 0 || opts.rank >= opts.world_size) {
      throw InvalidArgument(fmt::format(
          "with an explicit store, pass rank and world size (got rank {}, world size {})",
          opts.rank, opts.world_size));
    }
    rdzv = Rendezvous{opts.store, opts.rank, opts.world_size, "store", rendezvous_host()};
    if (!opts.global_ranks.empty() &&
        (static_cast<int>(opts.global_ranks.size()) != opts.world_size ||
         std::set<int>(opts.global_ranks.begin(), opts.global_ranks.end()).size() !=
             opts.global_ranks.size() ||
         *std::min_element(opts.global_ranks.begin(), opts.global_ranks.end()) < 0)) {
      throw InvalidArgument(
          fmt::format("global_ranks must list {} distinct non-negative world ranks (got {})",
                      opts.world_size, opts.global_ranks.size()));
    }
  } else {
    if (!opts.global_ranks.empty())
      throw InvalidArgument("global_ranks needs an explicit store (InitOptions::store)");
    std::optional<SelfRendezvous> self = launcher_self_rendezvous(reg, method, env, timeout);
    if (self) {
      rdzv = Rendezvous{self->store, self->rank, self->world_size,
                        reg.self_rendezvous ? reg.name : "mpi", self->store_host};
    } else {
      rdzv = rendezvous(RendezvousRequest{method, opts.rank, opts.world_size, timeout}, env);
    }
  }
  set_log_rank(rdzv.rank);
  log(LogLevel::Info, "init_process_group: backend {} rank {}/{} via {}", reg.name, rdzv.rank,
      rdzv.world_size, rdzv.method);

  GroupInfo info;
  info.backend = reg.name;
  info.name = "0";
  info.desc = opts.group_desc;
  info.rank = rdzv.rank;
  info.size = rdzv.world_size;
  info.timeout = timeout;
  info.store = std::make_shared<PrefixStore>("pg/0", rdzv.store);
  info.store_host = rdzv.store_host;
  info.global_ranks = opts.global_ranks;  // empty: ProcessGroup fills 0..size-1
  return create(reg, std::move(info), env);
}

std::shared_ptr<ProcessGroup> new_group(ProcessGroup& parent, const std::vector<int>& ranks,
                                        const NewGroupOptions& opts) {
  const GroupInfo& p = parent.info();
  const int id = g_next_group_id.fetch_add(1);
  std::set<int> seen;
  for (int r : ranks) {
    if (r < 0 || r >= p.size) {
      throw InvalidArgument(
          fmt::format("new_group: rank {} is outside the parent group of {}", r, p.size));
    }
    if (!seen.insert(r).second) {
      throw InvalidArgument(fmt::format("new_group: rank {} is listed twice", r));
    }
  }
  if (ranks.empty()) throw InvalidArgument("new_group: empty rank list");
  int my = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == p.rank) my = static_cast<int>(i);
  }
  if (my < 0) return nullptr;

  auto prefixed = std::dynamic_pointer_cast<PrefixStore>(p.store);
  std::shared_ptr<Store> root = prefixed ? prefixed->base() : p.store;
  auto store = std::make_shared<PrefixStore>(fmt::format("pg/{}", id), root);
  agree_on_members(*store, p.rank, id, ranks);
  GroupInfo info;
  info.backend = opts.backend.empty() ? p.backend : opts.backend;
  info.name = std::to_string(id);
  info.desc = opts.desc;
  info.rank = my;
  info.size = static_cast<int>(ranks.size());
  for (int r : ranks) info.global_ranks.push_back(p.global_ranks.at(r));
  info.timeout = opts.timeout == kUseGroupTimeout ? p.timeout : opts.timeout;
  info.store = store;
  info.store_host = p.store_host;
  // Look the backend up before moving `info`: argument evaluation order is unspecified, and GCC
  // moves `info` first, which made every new_group fail with "unknown backend ''".
  const BackendRegistration& reg = lookup(info.backend);
  return create(reg, std::move(info), Env::process());
}

void destroy_process_group(ProcessGroup& pg) { pg.shutdown(); }

}  // namespace collie
