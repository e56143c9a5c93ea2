#include "probes/stragglers.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "comm/rendezvous.h"
#include "core/clock.h"
#include "core/tensor.h"
#include "perf/test_hooks.h"
#include "probes/link_matrix.h"
#include "reports/arrival.h"
#include "stack/init.h"

namespace collie::probes {
namespace {

RankLateness lateness_of(const reports::RankArrival& a, const std::vector<std::string>& hosts) {
  RankLateness l;
  l.rank = a.rank;
  l.host = a.rank < static_cast<int>(hosts.size()) ? hosts[a.rank] : "";
  l.median_late_us = a.late_p50_us;
  l.p95_late_us = a.late_p95_us;
  l.last_fraction = a.last_fraction;
  l.median_wait_us = a.wait_p50_us;
  return l;
}

}  // namespace

std::vector<RankLateness> StragglerResult::stragglers() const {
  // Late in absolute terms and standing out from the others (reports/arrival.h's rule): on a
  // busy host every rank is a few ms late now and then, which is noise, not a straggler.
  reports::ArrivalStats s;
  s.iters = iters;
  for (const auto& r : ranks)
    s.ranks.push_back({r.rank, r.median_late_us, r.p95_late_us, r.last_fraction, r.median_wait_us});
  std::vector<RankLateness> out;
  for (const auto& a : reports::late_ranks(s, reports::LateRule{late_us}))
    for (const auto& r : ranks)
      if (r.rank == a.rank) out.push_back(r);
  return out;
}

StragglerResult analyze_stragglers(const std::vector<std::vector<double>>& waits,
                                   const std::vector<std::string>& hosts, double late_us) {
  const reports::ArrivalStats a = reports::analyze_arrivals(waits);
  StragglerResult res;
  res.world = static_cast<int>(waits.size());
  res.late_us = late_us;
  res.iters = a.iters;
  res.missing_ranks = a.missing;
  for (const auto& r : a.ranks) res.ranks.push_back(lateness_of(r, hosts));
  res.median_skew_us = a.skew_p50_us;
  res.p95_skew_us = a.skew_p95_us;
  return res;
}

nlohmann::json StragglerResult::to_json() const {
  nlohmann::json j;
  j["probe"] = "stragglers";
  j["world_size"] = world;
  j["iterations"] = iters;
  j["late_threshold_us"] = late_us;
  j["median_skew_us"] = median_skew_us;
  j["p95_skew_us"] = p95_skew_us;
  j["missing_ranks"] = missing_ranks;
  j["error"] = error;
  auto to = [](const RankLateness& r) {
    return nlohmann::json{{"rank", r.rank},
                          {"host", r.host},
                          {"median_late_us", r.median_late_us},
                          {"p95_late_us", r.p95_late_us},
                          {"last_fraction", r.last_fraction},
                          {"median_wait_us", r.median_wait_us}};
  };
  j["ranks"] = nlohmann::json::array();
  for (const auto& r : ranks) j["ranks"].push_back(to(r));
  j["stragglers"] = nlohmann::json::array();
  for (const auto& r : stragglers()) j["stragglers"].push_back(to(r));
  return j;
}

std::string StragglerResult::to_text() const {
  // Up to kAllRows ranks the table lists every rank; beyond, the kLatestRows latest ones (the
  // JSON has them all), so thousands of ranks read on one screen.
  constexpr size_t kAllRows = 64, kLatestRows = 16;
  std::string out = fmt::format(
      "# stragglers: {} ranks, {} iterations; skew (last - first arrival) median {:.1f} us, "
      "p95 {:.1f} us\n#  rank  host                 late p50 (us)  late p95 (us)  last (%)  "
      "wait p50 (us)\n",
      world, iters, median_skew_us, p95_skew_us);
  std::vector<const RankLateness*> shown;
  for (const auto& r : ranks) shown.push_back(&r);
  if (shown.size() > kAllRows) {
    std::stable_sort(shown.begin(), shown.end(), [](const auto* a, const auto* b) {
      return a->median_late_us > b->median_late_us;
    });
    shown.resize(kLatestRows);
  }
  for (const auto* r : shown)
    out += fmt::format("#  {:>4}  {:<20} {:>13.1f}  {:>13.1f}  {:>8.0f}  {:>13.1f}\n", r->rank,
                       r->host, r->median_late_us, r->p95_late_us, r->last_fraction * 100,
                       r->median_wait_us);
  if (shown.size() < ranks.size())
    out += fmt::format("#  ... the {} latest of {} ranks shown (every rank in the JSON)\n",
                       shown.size(), ranks.size());
  if (!error.empty()) out += fmt::format("FAILED: {}\n", error);
  if (!missing_ranks.empty())
    out += fmt::format("MISSING: ranks {} did not report\n", format_ranks(missing_ranks));
  const auto s = stragglers();
  for (size_t i = 0; i < s.size() && i < kLatestRows; ++i)
    out += fmt::format(
        "STRAGGLER: rank {} on {} arrives {:.1f} us after the earliest rank (median), last in "
        "{:.0f}% of iterations\n",
        s[i].rank, s[i].host, s[i].median_late_us, s[i].last_fraction * 100);
  if (s.size() > kLatestRows)
    out += fmt::format("STRAGGLER: ... and {} more ranks (every one in the JSON)\n",
                       s.size() - kLatestRows);
  if (s.empty() && error.empty() && missing_ranks.empty())
    out += fmt::format("OK: no rank consistently {:.0f} us late\n", late_us);
  return out;
}

StragglerResult run_stragglers(ProbeContext& ctx, const StragglerOptions& opts) {
  const std::string tag = ctx.tag();
  std::vector<double> waits;
  std::string error;
  try {
    std::shared_ptr<ProcessGroup> pg = world_group(ctx, tag);
    // The reduced buffer lives where the group's do (host, or the GPU for nccl); zeros, so the
    // sums stay finite however many iterations run.
    device::DeviceRuntime& dev = pg->device_runtime();
    const size_t count = static_cast<size_t>(std::max<int64_t>(opts.bytes / 4, 1));
    device::Buffer data = dev.allocate(count * sizeof(float));
    perf::CpuWork work;  // fixed work, not fixed time: a slower or busier host takes longer
    TensorView t = dev.view(data.data(), count, DType::Float32);
    volatile float sink = 0;
    for (int i = 0; i < opts.warmup + opts.iters; ++i) {
      if (opts.before_iteration) opts.before_iteration(ctx.rank, i);
      if (opts.work_per_iter > 0) sink = sink + work.run(opts.work_per_iter);
      const auto arrive = Clock::system().now();
      auto w = pg->all_reduce(t);
      error = wait_for(*w, ctx.timeout);
      if (!error.empty()) {
        error = fmt::format("rank {} iteration {}: {}", ctx.rank, i, error);
        break;
      }
      if (i >= opts.warmup)
        waits.push_back(
            std::chrono::duration<double, std::micro>(Clock::system().now() - arrive).count());
    }
    destroy_process_group(*pg);
  } catch (const std::exception& e) {
    error = fmt::format("rank {}: {}", ctx.rank, e.what());
  }
  nlohmann::json row{{"waits", waits}, {"error", error}};
  const auto rows = gather_to_root(ctx, tag + "/rows", row.dump(), ctx.timeout * 2);
  if (ctx.rank != 0) return {};
  std::vector<std::vector<double>> all(ctx.world);
  std::string first_error;
  for (int r = 0; r < ctx.world; ++r) {
    if (!rows[r]) continue;
    const auto j = nlohmann::json::parse(*rows[r]);
    all[r] = j.at("waits").get<std::vector<double>>();
    if (first_error.empty()) first_error = j.at("error").get<std::string>();
  }
  StragglerResult res = analyze_stragglers(all, ctx.hosts, opts.late_us);
  res.error = first_error;
  return res;
}

}  // namespace collie::probes
