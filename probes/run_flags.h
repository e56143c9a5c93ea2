#pragma once
// Launch and output flags shared by `collie probe` and `collie accept` (the same ones as
// `collie perf`: -np, --backend, -T, -J, --debug-port), and the one place that decides between
// relaunching locally (no launcher found) and running as a rank (collie launch, mpirun, or
// plain env:// variables).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "probes/context.h"

namespace collie::probes {

inline constexpr int kDefaultStepTimeoutS = 10;

struct RunFlags {
  int np = 4;             // local ranks when no launcher is found
  bool np_given = false;  // set by the caller from the parser
  std::string backend = "gloo";
  // False for probes that do not create groups of the backend (env): no availability check.
  bool uses_backend = true;
  int timeout_s = kDefaultStepTimeoutS;  // deadline of every probe step (-T; 0 = the default)
  std::string json;                      // -J: results JSON (rank 0)
  int debug_port = -1;                   // --debug-port: per-rank debug server base port (-1 = off)
};

// Adds the flags to a CLI11 app (a template so probes/ does not depend on CLI11).
template <class App>
void add_run_flags(App& app, RunFlags& f) {
  app.add_option("--np", f.np, "local ranks to start when not under a launcher (-np works too)");
  app.add_option("--backend", f.backend, "gloo | mpi | nccl");
  app.add_option("-T,--timeout", f.timeout_s, "seconds bounding every probe step (0 = default 10)");
  app.add_option("-J,--output_file", f.json, "write results JSON here (rank 0)");
  app.add_option("--debug-port", f.debug_port, "start each rank's debug server on PORT+local rank");
}

// Under a launcher: builds the context and returns body(ctx) on every rank. Without one:
// starts `np` local ranks of this same command line (src/launch) and returns their status.
// Returns 2 (usage) for contradictory flags, a backend not built or unable to run on this host
// (when uses_backend), -np outside 1..4096, or an output file (-J, and
// the command's own `extra_outputs`: {flag, path}) that cannot be written, after one line on
// stderr naming `command`; all of this before any rank starts.
int launch_or_run(const RunFlags& f, const std::string& command,
                  const std::function<int(ProbeContext&)>& body,
                  const std::vector<std::pair<std::string, std::string>>& extra_outputs = {});

}  // namespace collie::probes
