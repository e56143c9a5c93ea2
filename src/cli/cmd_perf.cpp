// `collie perf [COLLECTIVE...|all] [flags]`: the nccl-tests-compatible benchmark. Thin: parses
// and checks flags, launches local ranks when not under a launcher (cli/run_flags.h, shared with
// probe and accept), creates the process group and hands everything else to perf/ (engine) and
// reports/ (output).
#include <fmt/format.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/run_flags.h"
#include "core/env.h"
#include "core/env_snapshot.h"
#include "core/error.h"
#include "core/size.h"
#include "debug/dump_service.h"
#include "launch/launch.h"
#include "perf/collective.h"
#include "perf/driver.h"
#include "perf/metrics_sink.h"
#include "perf/output.h"
#include "perf/stop_signal.h"
#include "probes/link_capacity.h"
#include "reports/row_writers.h"
#include "stack/init.h"

namespace collie::cli {
namespace {

using perf::PerfOptions;

// On Ctrl-C / SIGTERM (forwarded to every local rank) the ranks finish the row they are in,
// write their results and exit; a large row gets this long. A second Ctrl-C kills at once.
constexpr Millis kStopGrace{std::chrono::seconds(30)};

struct PerfFlags {
  std::vector<std::string> collectives;
  std::string min_bytes = "8", max_bytes = "64M", step_bytes = "1M";
  int64_t step_factor = 2;
  int iters = 20, warmup = 1, agg = 1, cycles = 1, check = 1;
  std::string op = "sum", dtype = "float";
  int root = 0, average = 1, blocking = 0, timestamps = 0;
  int per_iter = 0, iter_skip = 0, cuda_graph = 0, memory_report = 0;
  std::string csv, jsonl, placement = "both";
  RunFlags run;  // -np, --backend, -T, -J, --debug-port (shared with probe and accept)
  double min_busbw = 0;
  int nthreads = 1, ngpus = 1;  // nccl-tests' -t and -g: 1 is what collie does
  std::string duration;
  uint64_t seed = 0;
  std::string traffic;  // alltoallv: --traffic, else nccl-tests' NCCL_TESTS_ALLTOALLV_* variables
  uint64_t traffic_seed = 1;
  // Unset: NCCL_TESTS_ALLTOALLV_MATRIX_SCALE, else 1.
  std::optional<double> traffic_scale;
  bool traffic_summary = false;
};

// The traffic of the collectives that take one (alltoallv), read only when one is asked for:
// --traffic, else nccl-tests' variables. A matrix file is read here, so a bad one is one line
// before any rank starts (and again by each rank, which all must agree: run_perf checks).
bool uses_traffic(const PerfOptions& o) {
  return std::any_of(o.collectives.begin(), o.collectives.end(), [](auto& name) {
    return perf::find_collective(name)->traffic_layout != nullptr;
  });
}

void resolve_traffic(const PerfFlags& f, PerfOptions& o) {
  const Env& env = Env::process();
  if (!uses_traffic(o)) {
    if (!f.traffic.empty())
      throw InvalidArgument("--traffic shapes alltoallv only; add alltoallv to the collectives");
    if (f.traffic_scale)
      throw InvalidArgument(
          "--traffic-scale scales alltoallv's matrix; add alltoallv to the "
          "collectives");
    return;
  }
  // --traffic-scale replaces NCCL_TESTS_ALLTOALLV_MATRIX_SCALE wherever the matrix comes from.
  if (f.traffic_scale) check_finite(*f.traffic_scale, "--traffic-scale", 0, 1e12);
  if (!f.traffic.empty()) {
    double scale = 1.0;
    if (f.traffic_scale) {
      scale = *f.traffic_scale;
    } else if (const auto v = env.get("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE"); v && !v->empty()) {
      scale = parse_finite(*v, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", 0, 1e12);
    }
    o.traffic = perf::parse_traffic(f.traffic, f.traffic_seed, scale);
  } else {
    o.traffic = perf::traffic_from_env(env, f.traffic_scale);
  }
  if (f.traffic_scale && !o.traffic.fixed_bytes())
    throw InvalidArgument(fmt::format(
        "--traffic-scale scales a matrix file (--traffic file:PATH or "
        "NCCL_TESTS_ALLTOALLV_MATRIX_FILE); this run's traffic is {}, whose bytes follow -b/-e",
        o.traffic.word()));
  const auto summary = env.get("NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY");
  o.traffic_summary = f.traffic_summary ||
                      (summary && !summary->empty() &&
                       parse_finite(*summary, "NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY", 0, 1e9) != 0);
}

// Turns flags into engine options; every mistake is one InvalidArgument line (exit 2). The
// launch flags (f.run) are checked by launch_or_run; the conversions and the sweep's rules are
// perf/options.h's, which accept's perf checks use too.
// The busbw gate in GB/s: --min-busbw, else nccl-tests' NCCL_TESTS_MIN_BW; 0 = no gate. A value
// that is not a number in [0, 1e9] is an InvalidArgument naming the variable (nccl-tests' strtod
// would read "abc" or "5GB/s" as 0 or 5 and silently turn the gate off or change it).
double min_busbw_gate(const PerfFlags& f, const Env& env) {
  if (f.min_busbw > 0) return f.min_busbw;
  const auto v = env.get("NCCL_TESTS_MIN_BW");
  return v && !v->empty() ? parse_finite(*v, "NCCL_TESTS_MIN_BW", 0, 1e9) : 0;
}

PerfOptions to_options(const PerfFlags& f, bool iters_given) {
  // nccl-tests drives several GPUs from one process (-g) or several threads (-t); collie runs one
  // rank per process, with one device each, as nccl-tests does under mpirun with -g 1.
  if (f.nthreads != 1)
    throw InvalidArgument(fmt::format(
        "-t {}: collie runs one rank per process, not threads; start {} ranks per host instead "
        "(-np N here, or your launcher's tasks per node); -t 1 is accepted",
        f.nthreads, f.nthreads));
  if (f.ngpus != 1)
    throw InvalidArgument(fmt::format(
        "-g {}: each collie rank drives one device; start one rank per GPU instead (-np N here, "
        "or your launcher's tasks per node, as nccl-tests with -g 1 under mpirun); -g 1 is "
        "accepted",
        f.ngpus));
  PerfOptions o;
  o.collectives =
      perf::parse_collectives(f.collectives, /*allow_all=*/true, "collectives", &o.collectives_all);
  o.min_bytes = parse_byte_size(f.min_bytes, "-b");
  o.max_bytes = parse_byte_size(f.max_bytes, "-e");
  o.step_bytes = parse_byte_size(f.step_bytes, "-i");
  o.step_factor = f.step_factor;
  perf::check_sweep(o);
  if (f.iters < 1) throw InvalidArgument("-n must be >= 1");
  if (f.warmup < 0 || f.agg < 1 || f.cycles < 0 || f.check < 0 || f.iter_skip < 0)
    throw InvalidArgument("-w, -c, -N and -K must be >= 0 and -m >= 1");
  if (f.iter_skip >= f.iters) throw InvalidArgument("-K must be smaller than -n");
  o.iters = f.iters;
  o.scale_iters = !iters_given;
  o.warmup_iters = f.warmup;
  o.agg_iters = f.agg;
  o.cycles = f.cycles;
  if (!f.duration.empty()) {
    o.duration = parse_duration(f.duration);
    if (o.duration.count() <= 0) throw InvalidArgument("--duration must be > 0 (e.g. 30s, 10m)");
  }
  o.check_iters = f.check;
  o.ops = perf::parse_ops(f.op, /*allow_all=*/true, "-o");
  o.dtypes = perf::parse_dtypes(f.dtype, /*allow_all=*/true, "-d");
  if (f.root < -1) throw InvalidArgument("-r must be a rank or -1 (all roots)");
  o.root = f.root;
  if (f.average < 0 || f.average > 3)
    throw InvalidArgument("-a must be 0 (rank 0), 1 (avg), 2 (min) or 3 (max)");
  o.average = static_cast<perf::TimeReduce>(f.average);
  o.blocking = f.blocking != 0;
  if (const Millis t = run_timeout(f.run); t.count() > 0) o.timeout = t;
  o.report_iters = f.per_iter != 0;
  o.iter_skip = f.iter_skip;
  o.timestamps = f.timestamps != 0;
  if (f.placement == "in")
    o.placement = perf::Placement::In;
  else if (f.placement == "out")
    o.placement = perf::Placement::Out;
  else if (f.placement == "both")
    o.placement = perf::Placement::Both;
  else
    throw InvalidArgument("--placement must be in, out or both");
  o.seed = f.seed;
  if (f.cuda_graph < 0) throw InvalidArgument("-G must be >= 0 (graph launches; 0 = off)");
  // (An unknown --backend is check_run_flags' line.)
  if (f.cuda_graph > 0 && (f.run.backend == "gloo" || f.run.backend == "mpi"))
    throw DeviceError("-G needs a CUDA backend (--backend nccl); " + f.run.backend +
                      " runs on the host");
  o.graph_launches = f.cuda_graph;
  o.memory_report = f.memory_report != 0;
  check_finite(f.min_busbw, "--min-busbw", 0, 1e9);
  min_busbw_gate(f, Env::process());  // a bad NCCL_TESTS_MIN_BW is refused before any rank starts
  resolve_traffic(f, o);
  return o;
}

// The environment nccl-tests' JSON "env" list records, limited to the variables that shape a
// collective run (nccl-tests dumps every variable): core/env_snapshot.h's list, credentials'
// values redacted, as the debug server's /v1/config shows them.
std::vector<std::string> recorded_env() {
  std::vector<std::string> out;
  for (const EnvEntry& e : run_env(process_environ())) out.push_back(e.name + "=" + e.value);
  return out;
}

reports::NcclTestsConfig nccl_config(const PerfOptions& o, double min_bw) {
  reports::NcclTestsConfig c;
  c.args = launch::self_argv();
  c.env = recorded_env();
  c.min_bytes = o.min_bytes;
  c.max_bytes = o.max_bytes;
  c.step_bytes = o.step_bytes;
  c.step_factor = o.step_factor;
  c.warmup_iters = o.warmup_iters;
  c.iters = o.iters;
  c.agg_iters = o.agg_iters;
  c.check_iters = o.check_iters;
  c.blocking = o.blocking;
  c.per_iter = o.report_iters;
  c.graph_launches = o.graph_launches;
  c.iter_skip = o.iter_skip;
  c.min_busbw = min_bw > 0 ? min_bw : -1;
  return c;
}

// One rank of the run (launch_or_run has checked the flags and announced any test hook).
int run_rank(const PerfFlags& f, PerfOptions o, const std::map<std::string, std::string>& flags) {
  o.hooks = perf::TestHooks::from_env(Env::process());
  const double min_bw = min_busbw_gate(f, Env::process());
  InitOptions init;
  init.backend = f.run.backend;
  if (const Millis t = run_timeout(f.run); t.count() > 0) init.timeout = t;
  std::shared_ptr<ProcessGroup> pg = init_process_group(init);
  std::unique_ptr<perf::ReportSink> sink;
  // Rank 0's results reach the table/JSON writers through the live Prometheus gauges.
  std::unique_ptr<perf::MetricsSink> metrics_sink;
  if (pg->rank() == 0) {
    perf::OutputOptions out;
    out.json_path = f.run.json;
    out.csv_path = f.csv;
    out.jsonl_path = f.jsonl;
    out.timestamps = o.timestamps;
    out.report_iters = o.report_iters;
    out.progress = ::isatty(STDERR_FILENO) != 0 ||
                   Env::process().get("COLLIE_PERF_PROGRESS").value_or("") == "1";
    out.flags = flags;
    out.cycles = o.cycles;
    out.nccl = nccl_config(o, min_bw);
    sink = std::make_unique<perf::ReportSink>(stdout, out);
    metrics_sink = std::make_unique<perf::MetricsSink>(sink.get());
  }
  perf::StopOnSignal stop_on_signal;  // after rendezvous: Ctrl-C before it still kills at once
  perf::PerfOutcome res;
  try {
    res = perf::run_perf(*pg, o, metrics_sink.get(), COLLIE_VERSION, &stop_on_signal.flag());
  } catch (...) {
    // Write this rank's flight-recorder dump before leaving, while a SIGTERM from the launcher
    // (another rank failed the same moment) is still only a flag.
    DumpService::global().flush(std::chrono::seconds(2));
    throw;
  }
  // "Is this normal?": measured once the run is over, so that no measurement shares the host.
  if (sink && !res.result.rows.empty())
    res.result.capacity =
        probes::link_capacity(res.result.meta, Env::process(), pg->info().store_host);
  if (sink) sink->finish(res.result);
  destroy_process_group(*pg);
  if (res.stopped_by != 0 && pg->rank() == 0) {
    std::fprintf(stderr,
                 "collie perf: stopped by %s after %zu rows of cycle %d; every completed row is "
                 "written\n",
                 strsignal(res.stopped_by), res.result.rows.size(),
                 res.result.rows.empty() ? 0 : res.result.rows.back().cycle);
  }
  if (res.wrong_total > 0) {
    if (pg->rank() == 0)
      std::fprintf(stderr,
                   "collie perf: FAILED: %lld wrong elements (see #wrong; -J records the "
                   "first wrong rank and offset)\n",
                   static_cast<long long>(res.wrong_total));
    return kExitFailure;
  }
  if (pg->rank() == 0 && min_bw > 0 && res.result.summary &&
      res.result.summary->avg_busbw_gbps < 0.9 * min_bw) {
    std::fprintf(stderr, "collie perf: FAILED: avg bus bandwidth %g GB/s is below 0.9 x %g GB/s\n",
                 res.result.summary->avg_busbw_gbps, min_bw);
    return kExitFailure;
  }
  // Stopped by a signal: the conventional 128 + signal (130 for Ctrl-C, 143 for SIGTERM), after
  // a clean stop; wrong data and a missed --min-busbw (checked above) take precedence with 1.
  return res.stopped_by != 0 ? 128 + res.stopped_by : kExitOk;
}

const Command kCommand{
    "perf", "benchmark collectives (nccl-tests compatible table)", [](CLI::App& app) {
      auto f = std::make_shared<PerfFlags>();
      app.add_option(
          "collectives", f->collectives,
          "all_reduce all_gather broadcast reduce reduce_scatter alltoall alltoallv "
          "gather scatter sendrecv barrier, or all (on one rank all leaves out sendrecv; "
          "default all_reduce; all_to_all and nccl-tests' binary names such as "
          "all_reduce_perf work too)");
      app.add_option("-b,--minbytes", f->min_bytes,
                     "smallest size (8, 8B, 64K, 64KB, 64KiB, 1M, 1G: 1024-based)");
      app.add_option("-e,--maxbytes", f->max_bytes, "largest size");
      app.add_option("-i,--stepbytes", f->step_bytes, "size increment when -f is 1");
      app.add_option("-f,--stepfactor", f->step_factor, "size multiplication factor");
      auto* n = app.add_option("-n,--iters", f->iters,
                               "timed iterations (default 20, fewer above 1 MiB unless given)");
      app.add_option("-w,--warmup_iters", f->warmup, "warmup iterations");
      app.add_option("-m,--agg_iters", f->agg, "operations aggregated per iteration");
      app.add_option("-N,--run_cycles", f->cycles, "run the sweep N times (0 = forever)");
      app.add_option("-c,--check", f->check, "validation iterations (0 = off)");
      app.add_option("-o,--op", f->op, "sum prod max min avg all");
      app.add_option("-d,--datatype", f->dtype, "dtype (nccl-tests names) or all");
      app.add_option("-r,--root", f->root, "root rank (-1 = every root)");
      app.add_option("-a,--average", f->average, "time across ranks: 0 rank0 1 avg 2 min 3 max");
      app.add_option("-z,--blocking", f->blocking, "wait for every op (1) even with -m");
      add_run_flags(app, f->run,
                    "bound on every step: seconds (30, 0.5) or 30s, 500ms, 5m (default 0: "
                    "COLLIE_TIMEOUT, else 5 minutes)",
                    "write results JSON (nccl-tests' version-3 keys + collie.perf.v1)");
      app.add_option("-S,--report_timestamps", f->timestamps, "append a timestamp to each row");
      app.add_option("-I,--per_iter", f->per_iter, "print per-iteration statistics");
      app.add_option("-K,--skip_iters", f->iter_skip, "skip the first K iterations in -I stats");
      app.add_option("-G,--cudagraph", f->cuda_graph,
                     "capture the timed loop in a CUDA graph and launch it N times (nccl only)");
      app.add_option("-M,--memory_report", f->memory_report,
                     "print each rank's device memory after every collective (1 = on)");
      app.add_option("--csv", f->csv, "append rows to a CSV file");
      app.add_option("--jsonl", f->jsonl, "append rows to a JSONL file");
      app.add_option("--min-busbw", f->min_busbw,
                     "fail when avg busbw < 0.9 x this (GB/s; default $NCCL_TESTS_MIN_BW)");
      app.add_option("--placement", f->placement, "in | out | both");
      app.add_option("-t,--nthreads", f->nthreads,
                     "nccl-tests' threads per process: only 1 (collie runs one rank per process; "
                     "more ranks: -np)");
      app.add_option("-g,--ngpus", f->ngpus,
                     "nccl-tests' GPUs per thread: only 1 (one device per rank; more: -np)");
      app.add_option("--seed", f->seed, "seed of the validation data");
      app.add_option("--traffic", f->traffic,
                     "alltoallv traffic: spread[:S] (nccl-tests' pattern, default), uniform, "
                     "zipf:S, hot:K[:F] or file:PATH (an NxN byte matrix); default from "
                     "NCCL_TESTS_ALLTOALLV_MATRIX_FILE / _SPREAD");
      app.add_option("--traffic-seed", f->traffic_seed,
                     "seed of the uniform, zipf and hot traffic (default 1)");
      app.add_option("--traffic-scale", f->traffic_scale,
                     "factor on a matrix file's bytes (default NCCL_TESTS_ALLTOALLV_MATRIX_SCALE "
                     "or 1)");
      app.add_flag("--traffic-summary", f->traffic_summary,
                   "print each alltoallv row's per-rank bytes and bandwidth "
                   "(NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1)");
      auto* cycles = app.add_option("--duration", f->duration,
                                    "soak: repeat the sweep until this long has passed "
                                    "(e.g. 30s, 10m; with -N, whichever ends first)");
      return [f, n, cycles, &app]() -> int {
        PerfOptions o = to_options(*f, n->count() > 0);
        // --duration alone means "until the time is up", not one cycle.
        if (cycles->count() > 0 && app.get_option("-N")->count() == 0) o.cycles = 0;
        std::map<std::string, std::string> flags;
        for (const CLI::Option* opt : app.get_options()) {
          if (opt->count() == 0 || opt->get_name() == "--help") continue;
          std::string v;
          for (const auto& r : opt->results()) v += (v.empty() ? "" : " ") + r;
          flags[opt->get_name()] = v;
        }
        // The traffic as resolved (flags or nccl-tests' variables), so the run can be repeated.
        if (uses_traffic(o)) flags["traffic"] = o.traffic.repeat_flags();
        RunCommand cmd("perf", {{"--csv", f->csv}, {"--jsonl", f->jsonl}});
        cmd.stop_grace = kStopGrace;
        // --csv and --jsonl append: a symlink, a FIFO or a foreign CSV is refused up front.
        cmd.more_checks = [f] {
          reports::check_row_file(f->csv, "--csv", true);
          reports::check_row_file(f->jsonl, "--jsonl", false);
        };
        // The ranks' stderr is a pipe: tell rank 0 whether the user's terminal takes a progress
        // bar.
        if (::isatty(STDERR_FILENO)) cmd.extra_env["COLLIE_PERF_PROGRESS"] = "1";
        return launch_or_run(f->run, cmd, [&] { return run_rank(*f, o, flags); });
      };
    }};

}  // namespace

const Command& perf_command() { return kCommand; }

}  // namespace collie::cli
