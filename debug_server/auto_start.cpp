#include "debug_server/auto_start.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>

#include "comm/registry.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "debug_server/server.h"
#include "discovery/launch_env.h"
#include "store/prefix_store.h"

namespace collie {
namespace {

std::atomic<int> g_port_override{-1};
std::mutex g_mu;

std::unique_ptr<DebugServer>& server_slot() {
  static std::unique_ptr<DebugServer> s;
  return s;
}

// The base port asked for: --debug-port, else COLLIE_DEBUG_PORT; none when neither is set.
std::optional<int> configured_port(const Env& env) {
  const int port = g_port_override.load();
  if (port >= 0) return port;
  auto v = env.get_int_in("COLLIE_DEBUG_PORT", 0, 65535, " (0 = an ephemeral port)");
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

void start_debug_server_if_asked(const ProcessGroup& pg, const BackendArgs& args) {
  const GroupInfo& info = pg.info();
  if (info.name != "0") return;  // the world group; other groups share its server
  const Env& env = args.env ? *args.env : Env::process();
  const std::optional<int> asked = configured_port(env);
  if (!asked) return;
  const int port = *asked;
  std::lock_guard<std::mutex> lock(g_mu);
  if (server_slot()) return;
  DebugServerOptions o;
  o.rank = info.rank;
  o.world_size = info.size;
  o.local_rank = detect_launch_env(env).local_rank.value_or(port == 0 ? 0 : info.rank);
  o.bind_host = env.get("COLLIE_DEBUG_HOST").value_or("127.0.0.1");
  o.token = env.get("COLLIE_DEBUG_TOKEN").value_or("");
  const std::string names = env.get("COLLIE_DEBUG_ALLOWED_HOSTS").value_or("");
  for (size_t at = 0; at <= names.size();) {
    const size_t comma = std::min(names.find(',', at), names.size());
    if (comma > at) o.allowed_hosts.push_back(names.substr(at, comma - at));
    at = comma + 1;
  }
  o.base_port = port;
  o.backend = info.backend;
  o.group_timeout = info.timeout;
  // Addresses and the dump key live in the root store, outside the group's prefix.
  auto prefixed = std::dynamic_pointer_cast<PrefixStore>(info.store);
  o.store = prefixed ? prefixed->base() : info.store;
  o.dump_store = info.store;  // where this group's DumpService watches dump_request
  server_slot() = DebugServer::start(std::move(o));
}

bool debug_server_configured(const BackendArgs& args) {
  if (process_debug_server() != nullptr) return true;
  return configured_port(args.env ? *args.env : Env::process()).has_value();
}

void set_debug_port_override(int port) { g_port_override.store(port); }

DebugServer* process_debug_server() {
  std::lock_guard<std::mutex> lock(g_mu);
  return server_slot().get();
}

}  // namespace collie
