// `collie analyze DUMP_DIR [--json]`: explains a hang from the ranks' flight-recorder dumps.
// Exit status: 0 no problem found, 1 problems found (culprits named), 2 no usable dump.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "debug/analyzer.h"

namespace collie::cli {
namespace {

struct AnalyzeArgs {
  std::string dir;
  bool json = false;
  int world = -1;
};

int run_analyze(const AnalyzeArgs& a) {
  std::vector<std::string> errors;
  const std::vector<RankDump> dumps = load_dump_dir(a.dir, errors);
  for (const auto& e : errors) std::fprintf(stderr, "collie analyze: skipped %s\n", e.c_str());
  if (dumps.empty()) {
    std::fprintf(stderr,
                 "collie analyze: no collie_fr_rank_*.json in %s (set COLLIE_FR_DUMP_DIR on every "
                 "rank; dumps are written on timeout, error, SIGUSR1 or a store dump_request)\n",
                 a.dir.c_str());
    return kExitUsage;
  }
  const Analysis res = analyze(dumps, a.world);
  const std::string out = a.json ? to_json(res) + "\n" : to_text(res);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return res.findings.empty() ? kExitOk : kExitFailure;
}

COLLIE_COMMAND(Command{
    "analyze", "explain a hang from flight-recorder dumps (COLLIE_FR_DUMP_DIR)", [](CLI::App& sub) {
      auto args = std::make_shared<AnalyzeArgs>();
      sub.add_option("dump_dir", args->dir, "directory with the ranks' dumps")->required();
      sub.add_flag("--json", args->json, "machine-readable output");
      sub.add_option("--world-size", args->world,
                     "expected number of ranks (default: from the dumps)");
      return [args] { return run_analyze(*args); };
    }});

}  // namespace
}  // namespace collie::cli
