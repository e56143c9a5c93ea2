#pragma once
// `collie accept`: runs the checks of an AcceptSpec on every rank and, on rank 0, evaluates
// their rules into an AcceptReport (reports/accept_report.h) naming failing hosts, ranks, links
// and sizes with the evidence. The evaluate_* functions are pure (used by the tests);
// run_accept drives the probes and the perf engine.
#include <functional>
#include <string>
#include <vector>

#include "probes/accept_spec.h"
#include "probes/connectivity.h"
#include "probes/context.h"
#include "probes/env_probe.h"
#include "probes/pairwise.h"
#include "probes/perf_check.h"
#include "probes/stragglers.h"
#include "reports/accept_report.h"

namespace collie::probes {

// The report model and its writers live in reports/ (reports/accept_report.h).
using reports::AcceptReport;
using reports::CheckOutcome;
using reports::Finding;

// Check name -> metric -> value, from an earlier `collie accept -J` report. Throws SpecError.
using Baseline = reports::AcceptMetrics;
Baseline load_baseline(const std::string& path);

// The pairwise probe's options from a check's params, its absolute rules (min_link_gbps,
// max_latency_us) and the spec's node-type profiles, which set per-host limits.
PairwiseOptions pairwise_options(const CheckSpec& c, const AcceptSpec& spec,
                                 const std::vector<std::string>& hosts);

CheckOutcome evaluate_connectivity(const CheckSpec& c, const ConnectivityResult& r);
// Pairwise: the probe's confirmed findings (each with its fault code, severity, evidence and
// next step). A rule is broken by more named hosts / links than max_slow_hosts / max_slow_links
// allow, or by any finding below min_link_gbps / above max_latency_us (those limits are given
// to the probe, which confirms them like the relative rule); a broken rule fails the check when
// one of its findings is CRIT and warns otherwise. Missing ranks fail it.
CheckOutcome evaluate_pairwise(const CheckSpec& c, const PairwiseResult& r, const Baseline& b);
CheckOutcome evaluate_stragglers(const CheckSpec& c, const StragglerResult& r, const Baseline& b);
CheckOutcome evaluate_env(const CheckSpec& c, const EnvResult& r);
// Floors per size (min_busbw_gbps, max_time_us), #wrong == 0 at every size (always), relative
// rules on busbw@SIZE / time_us@SIZE; failing sizes are named with the slowest rank and host.
// `hosts` is indexed by rank.
// `spec` (may be null) adds its node-type profiles' min_busbw_gbps / max_time_us at the sizes
// the sweep measured: the limit is the loosest over the job's hosts that have one.
CheckOutcome evaluate_perf(const CheckSpec& c, const PerfCheckResult& r,
                           const std::vector<std::string>& hosts, const Baseline& b,
                           const AcceptSpec* spec = nullptr);
// "Is this normal?" on a perf check: what the link can carry (link_capacity.h) and each
// collective's peak busbw as a share of it, in the check's text, its details ("capacity") and
// its metrics ("capacity_pct": the lowest share). Says, decides nothing.
void add_capacity(CheckOutcome& o, const reports::LinkCapacity& c);

// Runs every check in order on every rank (REQUIRES: same spec everywhere). The report is
// complete on rank 0; other ranks get the check names only. A check that throws is a failed
// check (its error is the evidence); the run goes on with the next one.
// `save_if_hung` (rank 0, may be empty) gets the report so far, the hung check failed with the
// reason and the checks not run listed as failed, when a perf step outlives its deadline and the
// perf watchdog is about to end the process: write it out, so a hang still leaves a report.
AcceptReport run_accept(ProbeContext& ctx, const AcceptSpec& spec,
                        const std::function<void(const AcceptReport&)>& save_if_hung = {});

}  // namespace collie::probes
