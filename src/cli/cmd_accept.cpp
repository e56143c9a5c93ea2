// `collie accept --spec SPEC.yaml|json [--md F] [--junit F] [--html F] [-J F]`: cluster
// acceptance (probes/accept.h), reports through reports/accept_report.h.
// Exit status: 0 accepted (OK), 5 accepted with warnings (WARN), 6 inconclusive (no check failed,
// one could not decide), 1 rejected (CRIT), 2 unusable spec or flags (probes/verdict.h has the
// mapping).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/run_flags.h"
#include "probes/accept.h"
#include "probes/verdict.h"
#include "reports/accept_report.h"
#include "reports/json_io.h"
#include "store/store.h"

namespace collie::cli {
namespace {

using namespace collie::probes;

struct AcceptFlags {
  std::string spec;
  RunFlags run;
  std::string md, junit, html;
};

// Prints the verdict and writes every requested report file (atomically).
void write_reports(const AcceptFlags& f, const AcceptReport& rep) {
  std::fputs(reports::accept_text(rep).c_str(), stdout);
  std::fflush(stdout);
  if (!f.run.json.empty())
    reports::write_file_atomic(f.run.json, reports::accept_json(rep).dump(2) + "\n");
  if (!f.md.empty()) reports::write_file_atomic(f.md, reports::accept_markdown(rep));
  if (!f.junit.empty()) reports::write_file_atomic(f.junit, reports::accept_junit(rep));
  if (!f.html.empty()) reports::write_file_atomic(f.html, reports::accept_html(rep));
}

int run_accept_rank(const AcceptFlags& f, const AcceptSpec& spec, ProbeContext& ctx) {
  // A perf step stuck past its deadline ends the process; the reports so far are written first
  // and the exit status is "rejected".
  const AcceptReport rep = run_accept(ctx, spec, [&f](const AcceptReport& partial) {
    write_reports(f, partial);
    std::fflush(nullptr);
    std::_Exit(kExitFailure);
  });
  // Only rank 0's status counts: launch_or_run_probes gives it to every rank.
  if (ctx.rank == 0) write_reports(f, rep);
  const std::string v = rep.verdict();
  return verdict_exit_code(v == "OK"             ? Verdict::Ok
                           : v == "WARN"         ? Verdict::Warn
                           : v == "INCONCLUSIVE" ? Verdict::Inconclusive
                                                 : Verdict::Crit);
}

const Command kCommand{
    "accept", "cluster acceptance: run a spec's probes and rules, report pass/fail",
    [](CLI::App& app) {
      auto f = std::make_shared<AcceptFlags>();
      app.add_option("--spec", f->spec, "acceptance spec (YAML or JSON; see docs/acceptance.md)")
          ->required();
      add_run_flags(app, f->run,
                    "bound on every check's steps: seconds (30, 0.5) or 30s, 500ms, 5m (0 = the "
                    "spec's timeout)",
                    "write the JSON report here (rank 0)");
      auto* timeout = app.get_option("--timeout");
      auto* backend = app.get_option("--backend");
      app.add_option("--md", f->md, "write a Markdown report");
      app.add_option("--junit", f->junit, "write a JUnit XML report");
      app.add_option("--html", f->html, "write an HTML report");
      app.footer("Example: collie accept --spec docs/accept-spec.yaml -np 8 --junit accept.xml");
      return [f, timeout, backend]() -> int {
        AcceptSpec spec;
        try {
          spec = load_spec(f->spec);
          if (!spec.baseline.empty()) load_baseline(spec.baseline);
        } catch (const SpecError& e) {
          std::fprintf(stderr, "collie accept: unusable spec: %s\n", e.what());
          return kExitUsage;
        }
        // The spec names the backend and the step deadline unless the flags do (-T 0 = spec's).
        if (backend->count() == 0) f->run.backend = spec.backend;
        if (timeout->count() == 0 || run_timeout(f->run).count() == 0)
          f->run.timeout = std::to_string(spec.timeout.count()) + "ms";
        return launch_or_run_probes(
            f->run,
            RunCommand("accept", {{"--md", f->md}, {"--junit", f->junit}, {"--html", f->html}}),
            [f, spec](ProbeContext& ctx) { return run_accept_rank(*f, spec, ctx); });
      };
    }};

}  // namespace

const Command& accept_command() { return kCommand; }

}  // namespace collie::cli
