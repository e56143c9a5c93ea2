// `collie replay DUMPS [flags]`: runs a job's flight-recorder dumps again on the chosen backend
// and compares with the recorded durations (src/replay). Thin: reads the dumps (the analyzer's
// reader and limits), builds the plan once before any rank starts so a bad dump or flag is one
// line, launches the ranks (cli/run_flags.h: -np defaults to the dumps' ranks), and each rank
// builds the same plan, runs it and rank 0 reports.
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/run_flags.h"
#include "core/atomic_file.h"
#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/size.h"
#include "debug/analyzer.h"
#include "debug/dump_service.h"
#include "discovery/launch_env.h"
#include "replay/plan.h"
#include "replay/report.h"
#include "replay/runner.h"
#include "stack/init.h"

namespace collie::cli {
namespace {

struct ReplayFlags {
  std::string dumps;
  std::string ranks;  // --ranks: dump ranks to play
  int iters = 3, warmup = 1;
  size_t top = 10;
  bool per_op = false;
  std::string max_bytes = "1G";
  RunFlags run;
};

// The plan for a replay of `world` ranks; every problem is one InvalidArgument line.
replay::ReplayPlan load_plan(const ReplayFlags& f, int world) {
  std::vector<std::string> errors;
  const std::vector<RankDump> dumps = load_dump_dir(f.dumps, errors);
  if (!errors.empty()) {
    // A replay runs every rank's dump or none: an unusable one is refused, not skipped.
    throw InvalidArgument(fmt::format(
        "{}{}", errors.front(),
        errors.size() > 1 ? fmt::format(" (and {} more unusable files)", errors.size() - 1) : ""));
  }
  if (dumps.empty()) {
    throw InvalidArgument(fmt::format(
        "no collie_fr_rank_*.json nor PyTorch dump (nccl_trace_rank_<rank>) in {}", f.dumps));
  }
  replay::PlanOptions o;
  o.world = world;
  if (!f.ranks.empty()) o.ranks = replay::parse_rank_list(f.ranks, "--ranks");
  o.max_bytes = parse_byte_size(f.max_bytes, "--max-bytes");
  return replay::build_plan(dumps, o);
}

// With COLLIE_FR_DUMP_DIR still exported from the job being diagnosed (the usual case), the
// replay's ranks would write collie_fr_rank_<r>.json into the very folder they replay, over the
// recorded dumps (of other ranks too, with --ranks). Then the replay's own dumps are off, and
// it says so once; any other folder keeps them.
void keep_replayed_dumps(const ReplayFlags& f) {
  const std::string dir = Env::process().get("COLLIE_FR_DUMP_DIR").value_or("");
  struct stat a {};
  struct stat b {};
  if (dir.empty() || ::stat(dir.c_str(), &a) != 0 || ::stat(f.dumps.c_str(), &b) != 0 ||
      a.st_dev != b.st_dev || a.st_ino != b.st_ino)
    return;
  ::setenv("COLLIE_FR_DUMP_DIR", "", 1);  // before any rank (or this one) starts its DumpService
  if (detect_launch_env(Env::process()).rank.value_or(0) == 0)
    std::fprintf(stderr,
                 "collie replay: not writing the replay's own flight-recorder dumps: "
                 "COLLIE_FR_DUMP_DIR is %s, the folder being replayed, and they would replace its "
                 "dumps; point COLLIE_FR_DUMP_DIR at another folder to keep them\n",
                 printable(dir).c_str());
}

// How many ranks the replay has: the launcher's, -np, the --ranks named, or the dumps'.
int replay_world(const ReplayFlags& f) {
  const LaunchEnv le = detect_launch_env(Env::process());
  if (!le.source.empty() && le.world_size) return *le.world_size;
  if (f.run.np_given) return f.run.np;
  if (!f.ranks.empty()) return static_cast<int>(replay::parse_rank_list(f.ranks, "--ranks").size());
  std::vector<std::string> errors;
  int world = 0;
  for (const RankDump& d : load_dump_dir(f.dumps, errors)) {
    world = std::max({world, d.world_size, d.rank + 1});
    for (const auto& [id, g] : d.groups)
      for (int r : g.ranks) world = std::max(world, r + 1);
  }
  return std::max(world, 1);
}

int run_rank(const ReplayFlags& f) {
  InitOptions init;
  init.backend = f.run.backend;
  const Millis timeout = run_timeout(f.run);
  if (timeout.count() > 0) init.timeout = timeout;
  std::shared_ptr<ProcessGroup> pg = init_process_group(init);
  const replay::ReplayPlan plan = load_plan(f, pg->size());
  replay::RunnerOptions ro;
  ro.warmup = f.warmup;
  ro.iters = f.iters;
  if (timeout.count() > 0) ro.timeout = timeout;
  const replay::RankTimes mine = replay::run_plan(*pg, plan, ro);
  const auto all = replay::gather_times(*pg, mine, pg->info().timeout);
  if (pg->rank() == 0) {
    const replay::ReplayResult r =
        replay::summarize(plan, all, {COLLIE_VERSION, f.run.backend, f.dumps, f.warmup, f.iters});
    const std::string text = replay::to_text(plan, r, {f.top, f.per_op});
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (!f.run.json.empty()) write_file_atomic(f.run.json, replay::to_json(plan, r).dump(2) + "\n");
  }
  // With COLLIE_FR_DUMP_DIR set, each rank leaves the replay's own flight recorder there: to
  // compare with the recording, or to replay again.
  if (!DumpService::global().dump_dir().empty())
    DumpService::global().dump_now("collie replay finished");
  destroy_process_group(*pg);
  return kExitOk;
}

const Command kCommand{
    "replay", "run the collectives and p2p ops of flight-recorder dumps again and time them",
    [](CLI::App& app) {
      auto f = std::make_shared<ReplayFlags>();
      app.add_option("dumps", f->dumps,
                     "directory of the ranks' dumps (collie_fr_rank_*.json or PyTorch's "
                     "nccl_trace_rank_*)")
          ->required();
      add_run_flags(app, f->run, "seconds bounding every op and step (0 = the group's default)",
                    "write the replay as JSON (collie.replay.v1)");
      app.get_option("--np")->description(
          "local ranks to start when not under a launcher (default: as many as the ranks "
          "replayed; -np works too)");
      app.add_option("--ranks", f->ranks,
                     "the dumps' ranks to play, e.g. 0-3 (default: all; then -np is their "
                     "number)");
      app.add_option("-n,--iters", f->iters, "timed passes over the ops (default 3)");
      app.add_option("-w,--warmup_iters", f->warmup, "untimed passes first (default 1)");
      app.add_option("--top", f->top, "calls listed as differing most from the recording");
      app.add_flag("--per-op", f->per_op, "list every call with its time");
      app.add_option("--max-bytes", f->max_bytes,
                     "the most buffer memory a rank may hold at once: an op's input and "
                     "output, or the send/recv ops posted together (default 1G)");
      return [f]() -> int {
        if (f->iters < 1 || f->warmup < 0) throw InvalidArgument("-n must be >= 1 and -w >= 0");
        keep_replayed_dumps(*f);
        if (!f->run.np_given) f->run.np = replay_world(*f);
        // Every problem with the dumps or flags is one line here, before any rank starts.
        load_plan(*f, f->run.np);
        return launch_or_run(f->run, RunCommand("replay"), [&] { return run_rank(*f); });
      };
    }};

}  // namespace

const Command& replay_command() { return kCommand; }

}  // namespace collie::cli
