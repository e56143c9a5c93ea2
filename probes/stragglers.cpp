#include "probes/stragglers.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "comm/rendezvous.h"
#include "core/clock.h"
#include "core/tensor.h"
#include "probes/link_matrix.h"
#include "stack/init.h"

namespace collie::probes {
namespace {

constexpr double kStandOut = 3.0;  // a straggler is this many times later than the median rank

// Fixed work (not fixed time), so a slower or busier host takes longer.
float spin(std::vector<float>& buf, int64_t units) {
  float acc = 0;
  for (int64_t u = 0; u < units; ++u)
    for (auto& x : buf) acc += (x = x * 0.999f + 0.001f);
  return acc;
}

}  // namespace

std::vector<RankLateness> StragglerResult::stragglers() const {
  // Late in absolute terms and standing out from the crowd: on a busy host every rank is a few
  // ms late now and then, which is noise, not a straggler.
  std::vector<double> typical;
  for (const auto& r : ranks) typical.push_back(r.median_late_us);
  const double crowd = median(typical);
  std::vector<RankLateness> out;
  for (const auto& r : ranks)
    if (r.median_late_us >= late_us && r.median_late_us >= kStandOut * crowd) out.push_back(r);
  std::sort(out.begin(), out.end(), [](const RankLateness& a, const RankLateness& b) {
    return a.median_late_us > b.median_late_us;
  });
  return out;
}

StragglerResult analyze_stragglers(const std::vector<std::vector<double>>& waits,
                                   const std::vector<std::string>& hosts, double late_us) {
  StragglerResult res;
  res.world = static_cast<int>(waits.size());
  res.late_us = late_us;
  size_t iters = SIZE_MAX;
  for (const auto& w : waits)
    if (!w.empty()) iters = std::min(iters, w.size());
  if (iters == SIZE_MAX) iters = 0;
  res.iters = static_cast<int>(iters);
  std::vector<std::vector<double>> late(waits.size());
  std::vector<int> last_count(waits.size(), 0);
  std::vector<double> skews;
  for (size_t i = 0; i < iters; ++i) {
    double longest = -1, shortest = INFINITY;
    size_t last = 0;
    for (size_t r = 0; r < waits.size(); ++r) {
      if (waits[r].empty()) continue;
      longest = std::max(longest, waits[r][i]);
      if (waits[r][i] < shortest) {
        shortest = waits[r][i];
        last = r;
      }
    }
    skews.push_back(longest - shortest);
    ++last_count[last];
    for (size_t r = 0; r < waits.size(); ++r)
      if (!waits[r].empty()) late[r].push_back(longest - waits[r][i]);
  }
  for (size_t r = 0; r < waits.size(); ++r) {
    if (waits[r].empty()) {
      res.missing_ranks.push_back(static_cast<int>(r));
      continue;
    }
    RankLateness l;
    l.rank = static_cast<int>(r);
    l.host = r < hosts.size() ? hosts[r] : "";
    l.median_late_us = median(late[r]);
    l.p95_late_us = percentile(late[r], 0.95);
    l.last_fraction = iters ? static_cast<double>(last_count[r]) / iters : 0;
    l.median_wait_us = median(std::vector<double>(waits[r].begin(), waits[r].begin() + iters));
    res.ranks.push_back(l);
  }
  res.median_skew_us = skews.empty() ? 0 : median(skews);
  res.p95_skew_us = skews.empty() ? 0 : percentile(skews, 0.95);
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
    std::vector<float> work(16384, 1.0f);
    TensorView t = dev.view(data.data(), count, DType::Float32);
    volatile float sink = 0;
    for (int i = 0; i < opts.warmup + opts.iters; ++i) {
      if (opts.before_iteration) opts.before_iteration(ctx.rank, i);
      if (opts.work_per_iter > 0) sink = sink + spin(work, opts.work_per_iter);
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
