#pragma once
// `collie accept`: runs the checks of an AcceptSpec on every rank and, on rank 0, evaluates
// their rules into an AcceptReport naming failing hosts, ranks and links with the evidence.
// The evaluate_* functions are pure (used by the tests); run_accept drives the probes.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes/accept_spec.h"
#include "probes/connectivity.h"
#include "probes/context.h"
#include "probes/env_probe.h"
#include "probes/pairwise.h"
#include "probes/stragglers.h"

namespace collie::probes {

// Who is to blame, and why: kind is "host", "rank", "link", "pair", "field" or "size".
struct Finding {
  std::string kind;
  std::string who;
  std::string evidence;
};

struct CheckOutcome {
  std::string name;
  std::string kind;
  bool passed = true;
  std::vector<std::string> failures;  // one line per broken rule
  std::vector<Finding> findings;
  std::map<std::string, double> metrics;  // compared against a baseline by relative rules
  nlohmann::json details;                 // the probe's own JSON
  std::string text;                       // the probe's own text output
  double seconds = 0;
  void fail(std::string why) {
    passed = false;
    failures.push_back(std::move(why));
  }
};

struct AcceptReport {
  std::string name;
  std::string backend;
  int world = 0;
  std::vector<std::string> hosts;
  std::string baseline;
  std::vector<CheckOutcome> checks;
  bool passed() const;
  nlohmann::json to_json() const;
  std::string to_markdown() const;
  std::string to_junit() const;
  std::string to_html() const;
  std::string summary_text() const;  // what stdout shows
};

// Check name -> metric -> value, from an earlier report's JSON. Throws SpecError.
using Baseline = std::map<std::string, std::map<std::string, double>>;
Baseline load_baseline(const std::string& path);

// One perf sweep point as the accept rules see it.
struct PerfPoint {
  int64_t bytes = 0;
  double busbw_gbps = 0;
  double time_us = 0;
  int64_t wrong = 0;
};
// Runs a perf check on every rank; returns the points on rank 0. Supplied by the CLI (perf/ is
// not a dependency of probes/).
using PerfRunner = std::function<std::vector<PerfPoint>(ProbeContext&, const CheckSpec&)>;

CheckOutcome evaluate_connectivity(const CheckSpec& c, const ConnectivityResult& r);
CheckOutcome evaluate_pairwise(const CheckSpec& c, const PairwiseResult& r, const Baseline& b);
CheckOutcome evaluate_stragglers(const CheckSpec& c, const StragglerResult& r, const Baseline& b);
CheckOutcome evaluate_env(const CheckSpec& c, const EnvResult& r);
CheckOutcome evaluate_perf(const CheckSpec& c, const std::vector<PerfPoint>& points,
                           const Baseline& b);

// Runs every check in order on every rank (REQUIRES: same spec everywhere). The report is
// complete on rank 0; other ranks get the check names only. A check that throws is a failed
// check (its error is the evidence); the run goes on with the next one.
AcceptReport run_accept(ProbeContext& ctx, const AcceptSpec& spec, const PerfRunner& perf);

}  // namespace collie::probes
