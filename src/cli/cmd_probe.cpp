// `collie probe connectivity|pairwise|stragglers|env [flags]`: one cluster probe (probes/).
// Thin: parses flags, launches or joins the ranks, prints rank 0's result, writes -J JSON.
// Exit status: 0 healthy, 1 the probe found a problem (pairwise: a CRIT finding), 5 pairwise
// found only WARN findings, 6 pairwise could not decide (an INCONCLUSIVE finding, no CRIT),
// 2 bad flags, 3/4 runtime failures (probes/verdict.h).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/run_flags.h"
#include "probes/accept_spec.h"
#include "probes/connectivity.h"
#include "probes/env_probe.h"
#include "probes/pairwise.h"
#include "probes/stragglers.h"
#include "reports/json_io.h"

namespace collie::cli {
namespace {

using namespace collie::probes;

struct ProbeFlags {
  std::string name;
  RunFlags run;
  // connectivity
  int repeats = 1;
  double interval_s = 0;
  // pairwise
  std::string bytes = "4M";
  int iters = 5;
  double slow_threshold = 0.25;
  std::string schedule = "quick";
  int rotation = -1;
  int confirm = 2;
  double crit_drop = 0.5;
  double noise_k = 3;
  double min_link_gbps = 0;
  double max_latency_us = 0;
  double capacity_fraction = 0.1;
  double reverse_fraction = 0.1;
  // stragglers
  int coll_iters = 50;
  int64_t work = 0;
  double late_us = 500;
};

int emit_status(const RunFlags& f, const std::string& text, const nlohmann::json& j, int status) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (!f.json.empty()) reports::write_file_atomic(f.json, j.dump(2) + "\n");
  return status;
}

int emit(const RunFlags& f, const std::string& text, const nlohmann::json& j, bool healthy) {
  return emit_status(f, text, j, healthy ? kExitOk : kExitFailure);
}

// Rank 0's status (launch_or_run_probes gives it to every rank; the others return 0 here).
int run_probe(const ProbeFlags& f, ProbeContext& ctx) {
  if (f.name == "connectivity") {
    ConnectivityOptions o;
    o.rounds = f.repeats;
    o.interval = Millis(static_cast<int64_t>(f.interval_s * 1000));
    const auto r = run_connectivity(ctx, o);
    if (ctx.rank != 0) return kExitOk;
    return emit(f.run, r.to_text(), r.to_json(), r.all_reachable());
  }
  if (f.name == "pairwise") {
    PairwiseOptions o;
    o.bytes = parse_bytes(nlohmann::json(f.bytes), "--bytes");
    o.bw_iters = f.iters;
    o.slow_threshold = f.slow_threshold;
    o.schedule = f.schedule;
    o.rotation = f.rotation;
    o.confirm = f.confirm;
    o.crit_drop = f.crit_drop;
    o.noise_k = f.noise_k;
    o.min_link_gbps = f.min_link_gbps;
    o.max_latency_us = f.max_latency_us;
    o.capacity_fraction = f.capacity_fraction;
    o.reverse_fraction = f.reverse_fraction;
    const auto r = run_pairwise(ctx, o);
    if (ctx.rank != 0) return kExitOk;
    return emit_status(f.run, r.to_text(), r.to_json(), verdict_exit_code(r.verdict()));
  }
  if (f.name == "stragglers") {
    StragglerOptions o;
    o.iters = f.coll_iters;
    o.work_per_iter = f.work;
    o.late_us = f.late_us;
    const auto r = run_stragglers(ctx, o);
    if (ctx.rank != 0) return kExitOk;
    const bool ok = r.stragglers().empty() && r.error.empty() && r.missing_ranks.empty();
    return emit(f.run, r.to_text(), r.to_json(), ok);
  }
  const auto r = run_env(ctx);
  if (ctx.rank != 0) return kExitOk;
  return emit(f.run, r.to_text(), r.to_json(),
              r.inconsistencies.empty() && r.missing_ranks.empty());
}

const Command kCommand{
    "probe", "cluster probes: connectivity, pairwise, stragglers, env", [](CLI::App& app) {
      auto f = std::make_shared<ProbeFlags>();
      app.add_option("name", f->name, "connectivity | pairwise | stragglers | env")
          ->required()
          ->check(CLI::IsMember({"connectivity", "pairwise", "stragglers", "env"}));
      add_run_flags(
          app, f->run,
          "bound on every probe step: seconds (10, 0.5) or 10s, 500ms, 2m (0 = the default, 10 s)",
          "write results JSON here (rank 0)");
      app.add_option("--repeats", f->repeats, "connectivity: run the tournament N times");
      app.add_option("--interval", f->interval_s, "connectivity: seconds between repeats");
      app.add_option("--bytes", f->bytes, "pairwise: bandwidth message size (K/M/G)");
      app.add_option("-n,--iters", f->iters, "pairwise: bandwidth messages per direction");
      app.add_option("--slow-threshold", f->slow_threshold,
                     "pairwise: WARN for a host/link this fraction below the reference (0.25)");
      app.add_option("--crit-drop", f->crit_drop, "pairwise: CRIT from this fraction below (0.5)");
      app.add_option("--noise-k", f->noise_k,
                     "pairwise: and only beyond K x the measured noise (3)");
      app.add_option("--schedule", f->schedule,
                     "pairwise: quick (survey round + re-measurement) | full (every pair)")
          ->check(CLI::IsMember({"quick", "full"}));
      app.add_option("--rotation", f->rotation,
                     "pairwise: quick survey round (-1 = a different one every run)");
      app.add_option("--confirm", f->confirm,
                     "pairwise: re-measurements that must reproduce before naming (2)");
      app.add_option("--min-link-gbps", f->min_link_gbps, "pairwise: absolute floor (0 = none)");
      app.add_option("--max-latency-us", f->max_latency_us,
                     "pairwise: absolute latency ceiling (0 = none)");
      app.add_option("--capacity-fraction", f->capacity_fraction,
                     "pairwise: CRIT for a link below this share of what its hosts can do "
                     "(loopback, stated NIC speed; 0.1, 0 = off)");
      app.add_option(
          "--reverse-fraction", f->reverse_fraction,
          "pairwise: bad for a direction below this share of its reverse (0.1, 0 = off)");
      app.add_option("--coll-iters", f->coll_iters, "stragglers: timed collectives");
      app.add_option("--work", f->work, "stragglers: fixed CPU work units before each collective");
      app.add_option("--late-us", f->late_us, "stragglers: name ranks this many us late (median)");
      app.footer(
          "Examples:\n  collie probe connectivity -np 8\n  collie launch -np 8 -- collie probe "
          "pairwise --bytes 16M -J pairs.json\n  collie probe pairwise -np 8 --schedule full\n  "
          "mpirun -np 16 collie probe env --backend mpi");
      return [f]() -> int {
        f->run.uses_backend = f->name != "env";
        // Written so NaN fails every comparison.
        if (f->repeats < 1 || f->iters < 1 || f->coll_iters < 1 || f->confirm < 1 ||
            !(f->interval_s >= 0 && f->interval_s <= 3600) ||
            !(f->slow_threshold > 0 && f->slow_threshold < 1) ||
            !(f->crit_drop > 0 && f->crit_drop <= 1) || !(f->noise_k >= 0 && f->noise_k <= 1e6) ||
            !(f->min_link_gbps >= 0 && f->min_link_gbps <= 1e9) ||
            !(f->max_latency_us >= 0 && f->max_latency_us <= 1e12) ||
            !(f->late_us >= 0 && f->late_us <= 1e9) || f->work < 0 ||
            !(f->capacity_fraction >= 0 && f->capacity_fraction < 1) ||
            !(f->reverse_fraction >= 0 && f->reverse_fraction < 1)) {
          std::fprintf(stderr,
                       "collie probe: error: --repeats, -n, --coll-iters and --confirm must be "
                       ">= 1, --interval in 0..3600, --slow-threshold in (0, 1), --crit-drop in "
                       "(0, 1], --capacity-fraction and --reverse-fraction in [0, 1), --late-us "
                       "in 0..1e9, --noise-k and the floors finite and >= 0, --work >= 0\n");
          return kExitUsage;
        }
        try {
          parse_bytes(nlohmann::json(f->bytes), "--bytes");
        } catch (const SpecError& e) {
          std::fprintf(stderr, "collie probe: error: %s\n", e.what());
          return kExitUsage;
        }
        return launch_or_run_probes(f->run, RunCommand("probe"),
                                    [f](ProbeContext& ctx) { return run_probe(*f, ctx); });
      };
    }};

}  // namespace

const Command& probe_command() { return kCommand; }

}  // namespace collie::cli
