#pragma once
// The acceptance report of `collie accept` (schema "collie.accept.v1"): the checks a spec ran,
// whether each passed, the rules it broke and the findings that name hosts, ranks, links and sizes
// with their evidence. probes/ fills it in; this file renders it (JSON, which is also the baseline
// format, the terminal summary, Markdown, JUnit XML and HTML) and reads the metrics back from a
// JSON report for relative rules. Plain values; the renderers are pure functions; thread-safe.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/result.h"

namespace collie::reports {

inline constexpr const char* kAcceptSchemaName = "collie.accept.v1";

// Who is to blame, and why: kind is "host", "rank", "link", "pair", "field", "size" or "metric".
// Confirmed pairwise findings also carry a fault code ("HOST_SLOW"), a severity ("WARN" or
// "CRIT") and the next step for the operator; the evidence then shows effect size, noise and
// confirmations.
struct Finding {
  Finding() = default;
  Finding(std::string kind_, std::string who_, std::string evidence_, std::string code_ = "",
          std::string severity_ = "", std::string next_step_ = "")
      : kind(std::move(kind_)),
        who(std::move(who_)),
        evidence(std::move(evidence_)),
        code(std::move(code_)),
        severity(std::move(severity_)),
        next_step(std::move(next_step_)) {}
  std::string kind;
  std::string who;
  std::string evidence;
  std::string code;      // "" when the check has no fault codes
  std::string severity;  // "" = CRIT when the check failed
  std::string next_step;
};

struct CheckOutcome {
  std::string name;
  std::string kind;  // connectivity | pairwise | stragglers | env | perf
  bool passed = true;
  std::vector<std::string> failures;  // one line per broken rule (CRIT)
  std::vector<std::string> warnings;  // WARN-level rules: the check still passes
  // Rules the evidence could not decide (pairwise: an INCONCLUSIVE finding): neither a pass nor
  // a failure; re-running decides. A failure outranks them.
  std::vector<std::string> undecided;
  std::vector<Finding> findings;
  std::map<std::string, double> metrics;  // compared against a baseline by relative rules
  nlohmann::json details;                 // the probe's own JSON
  std::string text;                       // the probe's own text output
  std::vector<ResultRow> rows;            // perf checks: the sweep's rows (charts and tables)
  double seconds = 0;
  void fail(std::string why) {
    passed = false;
    failures.push_back(std::move(why));
  }
  void warn(std::string why) { warnings.push_back(std::move(why)); }
  void inconclusive(std::string why) { undecided.push_back(std::move(why)); }
  // "CRIT" (failed), "INCONCLUSIVE" (not failed, something undecided), "WARN" (passed with
  // warnings) or "OK".
  std::string verdict() const {
    return !passed              ? "CRIT"
           : !undecided.empty() ? "INCONCLUSIVE"
           : warnings.empty()   ? "OK"
                                : "WARN";
  }
};

struct AcceptReport {
  std::string name;
  std::string backend;
  int world = 0;
  std::vector<std::string> hosts;  // indexed by rank
  std::string baseline;            // path of the baseline report ("" = none)
  std::vector<CheckOutcome> checks;
  bool passed() const;
  // The worst check verdict: "CRIT" (rejected), "INCONCLUSIVE" (nothing failed, but a check
  // could not decide: neither accepted nor rejected), "WARN" (accepted with warnings) or "OK".
  std::string verdict() const;
};

nlohmann::json accept_json(const AcceptReport& r);
// What `collie accept` prints: each probe's own output, PASS/WARN/INCONCLUSIVE/FAIL per check with
// the broken rules and findings, then ACCEPTED, ACCEPTED WITH WARNINGS, INCONCLUSIVE or REJECTED.
std::string accept_text(const AcceptReport& r);
std::string accept_markdown(const AcceptReport& r);
// One <testsuite> for the spec, one <testcase> per check; a failed check is a <failure> whose
// text lists the broken rules and findings, an inconclusive one <skipped> (as report compare).
std::string accept_junit(const AcceptReport& r);
// Self-contained page (html_page style); perf checks get their bus-bandwidth chart.
std::string accept_html(const AcceptReport& r);

// Check name -> metric -> value, from a JSON report written by `collie accept -J`. Throws
// InvalidArgument naming the path when it cannot be read or is not such a report.
using AcceptMetrics = std::map<std::string, std::map<std::string, double>>;
AcceptMetrics read_accept_metrics(const std::string& path);

}  // namespace collie::reports
