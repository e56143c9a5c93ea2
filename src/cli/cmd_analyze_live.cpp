// `collie analyze-live STORE_HOST:PORT`: the debug servers' cluster analysis from a terminal.
// Reads every rank's debug-server address from the job's store (debug_server/<rank>), asks each
// rank for its live status (per-rank timeout) and prints the same findings as
// /v1/cluster/analyze. Exit 0 when all ranks are in step, 1 when some need attention.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cli/command.h"
#include "core/env.h"
#include "core/error.h"
#include "debug_server/cluster.h"
#include "store/tcp_store.h"

namespace collie::cli {
namespace {

struct Flags {
  std::string store;
  int world = 0;
  std::string timeout = "2s";
  std::string stall = "10s";
  std::string token;
  bool json = false;
};

int run_live(const Flags& f) {
  const size_t colon = f.store.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw InvalidArgument(
        fmt::format("'{}' is not HOST:PORT (the job's MASTER_ADDR:MASTER_PORT)", f.store));
  }
  TcpStoreOptions o;
  o.host = f.store.substr(0, colon);
  o.port = static_cast<uint16_t>(std::stoi(f.store.substr(colon + 1)));
  o.timeout = parse_duration(f.timeout);
  TcpStore store(o);
  int world = f.world;
  if (world <= 0) {
    // Ranks publish debug_server/0..N-1; count until the first gap.
    while (world < 65536 && store.check({fmt::format("debug_server/{}", world)})) ++world;
  }
  if (world == 0) {
    throw InvalidArgument(fmt::format(
        "no debug_server/<rank> keys in the store at {}; start the job with COLLIE_DEBUG_PORT set",
        f.store));
  }
  const ClusterView view =
      fetch_cluster(store, world, parse_duration(f.timeout), f.token, -1, nlohmann::json());
  const double stall_s = parse_duration(f.stall).count() / 1000.0;
  const nlohmann::json a = analyze_cluster(view, stall_s);
  if (f.json) {
    std::printf("%s\n", cluster_json(view, a).dump(2).c_str());
  } else {
    std::printf("%s (%d ranks, fetched in %.2f s)\n", a["summary"].get<std::string>().c_str(),
                world, view.elapsed_s);
    for (const auto& line : a["findings"]) std::printf("%s\n", line.get<std::string>().c_str());
    for (const auto& r : a["ranks"]) {
      if (r["state"] == "ok") continue;
      for (const auto& why : r["reasons"]) {
        std::printf("  rank %d %s: %s\n", r["rank"].get<int>(),
                    r["state"].get<std::string>().c_str(), why.get<std::string>().c_str());
      }
    }
  }
  return a["findings"].empty() ? kExitOk : kExitFailure;
}

COLLIE_COMMAND(Command{
    "analyze-live", "hang analysis from the live debug servers of a running job",
    [](CLI::App& sub) {
      auto f = std::make_shared<Flags>();
      sub.add_option("store", f->store, "the job's store, HOST:PORT (MASTER_ADDR:MASTER_PORT)")
          ->required();
      sub.add_option("--world", f->world, "number of ranks (default: count debug_server/<r> keys)");
      sub.add_option("--timeout", f->timeout, "per-rank timeout")->capture_default_str();
      sub.add_option("--stall", f->stall, "in-flight age that marks a rank stalled")
          ->capture_default_str();
      sub.add_option("--token", f->token, "bearer token (COLLIE_DEBUG_TOKEN)");
      sub.add_flag("--json", f->json, "print the cluster view and analysis as JSON");
      return [f] { return run_live(*f); };
    }});

}  // namespace
}  // namespace collie::cli
