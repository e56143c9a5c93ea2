#include "probes/context.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "comm/registry.h"
#include "comm/rendezvous.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/printable.h"
#include "stack/init.h"
#include "store/prefix_store.h"
#include "store/store.h"

namespace collie::probes {

std::string ProbeContext::tag() { return fmt::format("probe{}", next_tag++); }

std::string local_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

ProbeContext make_context(const ContextOptions& opts) {
  const Env& env = opts.env ? *opts.env : Env::process();
  configure_logging_from_env(env);
  ProbeContext ctx;
  ctx.backend = opts.backend;
  ctx.timeout = opts.timeout;
  ctx.env = opts.env;
  std::string method = opts.init_method;
  if (method.empty()) method = env.get("COLLIE_INIT_METHOD").value_or("");
  const BackendRegistration* reg = find_backend(opts.backend);
  if (reg == nullptr) {
    std::string known;
    for (const auto* b : backends()) known += (known.empty() ? "" : ", ") + b->name;
    throw InvalidArgument(
        fmt::format("backend {} is not in this build (built: {})", quote(opts.backend), known));
  }
  std::optional<SelfRendezvous> self = launcher_self_rendezvous(*reg, method, env, opts.timeout);
  if (self) {
    ctx.store = self->store;
    ctx.rank = self->rank;
    ctx.world = self->world_size;
  } else {
    // Rendezvous can take a while on a big job (ranks start at different times); the per-step
    // deadline starts once everyone is in.
    const Millis rdzv_timeout = std::max<Millis>(opts.timeout, std::chrono::seconds(60));
    Rendezvous r = rendezvous(RendezvousRequest{method, -1, -1, rdzv_timeout}, env);
    ctx.store = r.store;
    ctx.rank = r.rank;
    ctx.world = r.world_size;
  }
  set_log_rank(ctx.rank);
  exchange_hosts(ctx, local_hostname());
  return ctx;
}

void exchange_hosts(ProbeContext& ctx, const std::string& hostname) {
  ctx.host = hostname;
  ctx.hosts.clear();
  const Millis deadline = std::max<Millis>(ctx.timeout, std::chrono::seconds(60));
  Store::GatherResult r = ctx.store->gather("probe_hosts", ctx.rank, ctx.world, to_bytes(hostname),
                                            Store::GatherRead::kRoot, deadline);
  if (ctx.rank != 0) return;
  if (!r.complete)
    throw TimeoutError(fmt::format(
        "[Rank 0] probe host exchange: rank{} {} of {} did not report its host within {} ms "
        "(check that they started and can reach the store)",
        r.missing.size() == 1 ? "" : "s", format_ranks(r.missing), ctx.world, deadline.count()));
  ctx.hosts.reserve(r.values.size());
  for (const Bytes& v : r.values) ctx.hosts.push_back(to_string(v));
}

std::shared_ptr<ProcessGroup> world_group(ProbeContext& ctx, const std::string& tag) {
  InitOptions o;
  o.backend = ctx.backend;
  o.store = std::make_shared<PrefixStore>(tag + "/world", ctx.store);
  o.rank = ctx.rank;
  o.world_size = ctx.world;
  o.timeout = ctx.timeout;
  o.group_desc = "probe_world";
  o.env = ctx.env;
  return init_process_group(o);
}

std::shared_ptr<ProcessGroup> pair_group(ProbeContext& ctx, const std::string& tag, int a, int b) {
  InitOptions o;
  o.backend = ctx.backend;
  auto store = std::make_shared<PrefixStore>(fmt::format("{}/pair/{}-{}", tag, a, b), ctx.store);
  store->set_timeout(ctx.timeout);
  o.store = store;
  o.rank = ctx.rank == a ? 0 : 1;
  o.world_size = 2;
  o.global_ranks = {a, b};  // the MPI backend builds the pair's communicator from these
  o.timeout = ctx.timeout;
  o.group_desc = fmt::format("probe_pair_{}_{}", a, b);
  o.env = ctx.env;
  return init_process_group(o);
}

std::vector<std::optional<std::string>> collect(Store& store, const std::string& key, int member,
                                                int members, const std::string& value,
                                                Millis deadline) {
  store.set(fmt::format("{}/{}", key, member), value);
  const Store::GatherResult g =
      store.gather(key + "/in", member, members, {}, Store::GatherRead::kRoot, deadline);
  if (member != 0) return {};
  std::vector<std::optional<std::string>> out(members);
  std::vector<bool> in(members, true);
  for (int m : g.missing) in.at(m) = false;
  // The members in the gather set their value before joining it: their keys exist.
  std::vector<std::string> keys;
  std::vector<int> who;
  auto flush = [&] {
    if (keys.empty()) return;
    const std::vector<Bytes> vals = store.multi_get(keys);
    for (size_t i = 0; i < who.size(); ++i) out[who[i]] = to_string(vals[i]);
    keys.clear();
    who.clear();
  };
  for (int m = 0; m < members; ++m) {
    if (!in[m]) continue;
    keys.push_back(fmt::format("{}/{}", key, m));
    who.push_back(m);
    if (static_cast<int>(keys.size()) >= kCollectBatch) flush();
  }
  flush();
  return out;
}

std::vector<std::optional<std::string>> gather_to_root(ProbeContext& ctx, const std::string& key,
                                                       const std::string& value, Millis deadline) {
  return collect(*ctx.store, key, ctx.rank, ctx.world, value, deadline);
}

bool try_barrier(ProbeContext& ctx, const std::string& name, Millis deadline) {
  try {
    store_barrier(*ctx.store, name, ctx.rank, ctx.world, deadline);
    return true;
  } catch (const TimeoutError& e) {
    log(LogLevel::Warning, "{} (continuing without it)", e.what());
    return false;
  } catch (const StoreError& e) {
    log(LogLevel::Warning, "{} (continuing without it)", e.what());
    return false;
  }
}

std::string wait_for(Work& w, Millis deadline) {
  try {
    w.wait(deadline);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace collie::probes
