#include "probes/accept.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include "comm/rendezvous.h"
#include "core/env.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

std::string pct(double dev) { return fmt::format("{:.0f}%", std::fabs(dev) * 100); }

// Relative rules: metric -> allowed fractional drop (or rise) against the baseline's value.
void relative_rules(CheckOutcome& o, const CheckSpec& c, const Baseline& b) {
  const auto base = b.find(c.name);
  for (const bool drop : {true, false}) {
    const char* key = drop ? "max_drop_vs_baseline" : "max_rise_vs_baseline";
    if (!c.rules.contains(key)) continue;
    for (const auto& [metric, limit_j] : c.rules[key].items()) {
      const double limit = limit_j.get<double>();
      // "busbw" stands for every busbw@SIZE metric present in both runs.
      std::vector<std::string> names;
      for (const auto& [m, v] : o.metrics)
        if (m == metric || m.rfind(metric + "@", 0) == 0) names.push_back(m);
      if (names.empty()) {
        o.fail(fmt::format("{}: this run has no metric '{}'", key, metric));
        continue;
      }
      for (const auto& m : names) {
        if (base == b.end() || !base->second.count(m)) {
          o.fail(fmt::format("{}: the baseline has no '{}' for check '{}' (re-record it)", key, m,
                             c.name));
          continue;
        }
        const double was = base->second.at(m), now = o.metrics.at(m);
        const double change = was != 0 ? (now - was) / was : 0;
        if (drop && change < -limit)
          o.fail(fmt::format("{} fell {} below the baseline ({:.4g} -> {:.4g}; allowed {})", m,
                             pct(change), was, now, pct(limit)));
        if (!drop && change > limit)
          o.fail(fmt::format("{} rose {} above the baseline ({:.4g} -> {:.4g}; allowed {})", m,
                             pct(change), was, now, pct(limit)));
      }
    }
  }
}

CheckOutcome start(const CheckSpec& c, const json& details, std::string text) {
  CheckOutcome o;
  o.name = c.name;
  o.kind = c.kind;
  o.details = details;
  o.text = std::move(text);
  return o;
}

}  // namespace

CheckOutcome evaluate_connectivity(const CheckSpec& c, const ConnectivityResult& r) {
  CheckOutcome o = start(c, r.to_json(), r.to_text());
  const auto broken = r.broken();
  o.metrics["broken_pairs"] = static_cast<double>(broken.size());
  o.metrics["missing_ranks"] = static_cast<double>(r.missing_ranks.size());
  if (c.rules.value("all_reachable", false) && !r.all_reachable()) {
    o.fail(fmt::format("{} of {} pairs unreachable{}", broken.size(), r.pairs.size(),
                       r.missing_ranks.empty() ? ""
                                               : fmt::format(", ranks {} did not report",
                                                             format_ranks(r.missing_ranks))));
    for (const auto& h : r.isolated_hosts())
      o.findings.push_back({"host", h, "reaches no other host (every cross-host pair broken)"});
    for (const auto& p : broken)
      o.findings.push_back(
          {"pair", fmt::format("{} ({}) <-> {} ({})", p.a, r.hosts.at(p.a), p.b, r.hosts.at(p.b)),
           p.error});
    for (int m : r.missing_ranks)
      o.findings.push_back({"rank", fmt::format("{} ({})", m, r.hosts.at(m)),
                            "did not report its results through the store"});
  }
  if (c.rules.contains("max_rtt_us")) {
    const double lim = c.rules["max_rtt_us"].get<double>();
    for (const auto& p : r.pairs) {
      if (!p.ok || p.rtt_us <= lim) continue;
      o.fail(
          fmt::format("pair {} <-> {} round trip {:.0f} us > {:.0f} us", p.a, p.b, p.rtt_us, lim));
      o.findings.push_back(
          {"pair", fmt::format("{} ({}) <-> {} ({})", p.a, r.hosts.at(p.a), p.b, r.hosts.at(p.b)),
           fmt::format("round trip {:.0f} us", p.rtt_us)});
    }
  }
  return o;
}

CheckOutcome evaluate_pairwise(const CheckSpec& c, const PairwiseResult& r, const Baseline& b) {
  CheckOutcome o = start(c, r.to_json(), r.to_text());
  const auto hosts = r.host_scores();
  std::vector<double> hv, lat = r.latency_us.values();
  for (const auto& h : hosts) hv.push_back(h.value);
  o.metrics["median_gbps"] = hosts.empty() ? median(r.bw_gbps.values()) : median(hv);
  const auto vals = r.bw_gbps.values();
  o.metrics["min_link_gbps"] = vals.empty() ? 0 : *std::min_element(vals.begin(), vals.end());
  o.metrics["median_latency_us"] = lat.empty() ? 0 : median(lat);
  for (const auto& e : r.errors) {
    o.fail("pair failed: " + e);
    o.findings.push_back({"pair", e.substr(0, e.find(':')), e.substr(e.find(':') + 2)});
  }
  if (!r.missing_ranks.empty())
    o.fail(fmt::format("ranks {} did not report", format_ranks(r.missing_ranks)));
  const auto slow_hosts = r.slow_hosts();
  const auto slow_links = r.slow_links();
  if (c.rules.contains("max_slow_hosts") &&
      static_cast<int64_t>(slow_hosts.size()) > c.rules["max_slow_hosts"].get<int64_t>()) {
    o.fail(fmt::format("{} host(s) more than {} below the median host bandwidth", slow_hosts.size(),
                       pct(r.slow_threshold)));
    for (const auto& h : slow_hosts)
      o.findings.push_back(
          {"host", h.name,
           fmt::format("median cross-host link {:.4g} GB/s, {} below the median host ({:.4g} "
                       "GB/s)",
                       h.value, pct(h.deviation), o.metrics["median_gbps"])});
  }
  if (c.rules.contains("max_slow_links") &&
      static_cast<int64_t>(slow_links.size()) > c.rules["max_slow_links"].get<int64_t>()) {
    o.fail(fmt::format("{} link(s) more than {} below the median link", slow_links.size(),
                       pct(r.slow_threshold)));
    for (size_t i = 0; i < slow_links.size() && i < 10; ++i)
      o.findings.push_back({"link", slow_links[i].name,
                            fmt::format("{:.4g} GB/s, {} below the median", slow_links[i].value,
                                        pct(slow_links[i].deviation))});
  }
  if (c.rules.contains("min_link_gbps")) {
    const double floor = c.rules["min_link_gbps"].get<double>();
    for (const auto& l : r.links()) {
      if (l.value >= floor) continue;
      o.fail(fmt::format("link {} at {:.4g} GB/s is below the floor {:.4g} GB/s", l.name, l.value,
                         floor));
      o.findings.push_back(
          {"link", l.name, fmt::format("{:.4g} GB/s < {:.4g} GB/s", l.value, floor)});
    }
  }
  if (c.rules.contains("max_latency_us")) {
    const double lim = c.rules["max_latency_us"].get<double>();
    for (int i = 0; i < r.world; ++i)
      for (int j = i + 1; j < r.world; ++j) {
        const double v = r.latency_us.at(i, j);
        if (std::isnan(v) || v <= lim) continue;
        const std::string who =
            fmt::format("{}<->{} ({}<->{})", i, j, r.hosts.at(i), r.hosts.at(j));
        o.fail(fmt::format("link {} latency {:.1f} us > {:.1f} us", who, v, lim));
        o.findings.push_back({"link", who, fmt::format("latency {:.1f} us", v)});
      }
  }
  relative_rules(o, c, b);
  return o;
}

CheckOutcome evaluate_stragglers(const CheckSpec& c, const StragglerResult& r, const Baseline& b) {
  CheckOutcome o = start(c, r.to_json(), r.to_text());
  o.metrics["median_skew_us"] = r.median_skew_us;
  o.metrics["p95_skew_us"] = r.p95_skew_us;
  if (!r.error.empty()) o.fail("collective failed: " + r.error);
  if (!r.missing_ranks.empty())
    o.fail(fmt::format("ranks {} did not report", format_ranks(r.missing_ranks)));
  if (c.rules.contains("max_skew_us") && r.median_skew_us > c.rules["max_skew_us"].get<double>())
    o.fail(fmt::format("median arrival skew {:.1f} us > {:.1f} us", r.median_skew_us,
                       c.rules["max_skew_us"].get<double>()));
  const auto s = r.stragglers();
  if (c.rules.contains("max_stragglers") &&
      static_cast<int64_t>(s.size()) > c.rules["max_stragglers"].get<int64_t>())
    o.fail(fmt::format("{} rank(s) consistently late by >= {:.0f} us", s.size(), r.late_us));
  if (!o.passed)
    for (const auto& x : s)
      o.findings.push_back({"rank", fmt::format("{} ({})", x.rank, x.host),
                            fmt::format("arrives {:.1f} us after the earliest rank (median), last "
                                        "in {:.0f}% of iterations",
                                        x.median_late_us, x.last_fraction * 100)});
  relative_rules(o, c, b);
  return o;
}

CheckOutcome evaluate_env(const CheckSpec& c, const EnvResult& r) {
  CheckOutcome o = start(c, r.to_json(), r.to_text());
  std::vector<std::string> ignore = c.rules.value("ignore", std::vector<std::string>{});
  auto ignored = [&](const std::string& field) {
    for (const auto& i : ignore) {
      const bool wildcard = !i.empty() && i.back() == '*';
      if (wildcard ? field.rfind(i.substr(0, i.size() - 1), 0) == 0 : field == i) return true;
    }
    return false;
  };
  int n = 0;
  if (c.rules.value("consistent", false)) {
    for (const auto& inc : r.inconsistencies) {
      if (ignored(inc.field)) continue;
      ++n;
      o.findings.push_back({"field", inc.field, inc.to_text()});
    }
    if (n > 0) o.fail(fmt::format("{} setting(s) differ across ranks", n));
    if (!r.missing_ranks.empty())
      o.fail(fmt::format("ranks {} did not report", format_ranks(r.missing_ranks)));
  }
  o.metrics["inconsistencies"] = n;
  return o;
}

CheckOutcome evaluate_perf(const CheckSpec& c, const std::vector<PerfPoint>& points,
                           const Baseline& b) {
  json details = json::array();
  std::string text = fmt::format("# perf {}\n#       size   time (us)  busbw (GB/s)  #wrong\n",
                                 c.params.value("collective", ""));
  for (const auto& p : points) {
    details.push_back({{"bytes", p.bytes},
                       {"busbw_gbps", p.busbw_gbps},
                       {"time_us", p.time_us},
                       {"wrong", p.wrong}});
    text += fmt::format("  {:>10}  {:>10.2f}  {:>12.4f}  {:>6}\n", p.bytes, p.time_us, p.busbw_gbps,
                        p.wrong);
  }
  CheckOutcome o = start(c, json{{"points", details}}, text);
  for (const auto& p : points) {
    o.metrics[fmt::format("busbw@{}", p.bytes)] = p.busbw_gbps;
    if (p.wrong > 0) {
      o.fail(fmt::format("{} wrong elements at {} bytes", p.wrong, p.bytes));
      o.findings.push_back({"size", std::to_string(p.bytes), fmt::format("{} wrong", p.wrong)});
    }
  }
  if (c.rules.contains("min_busbw_gbps")) {
    for (const auto& [size_s, floor_j] : c.rules["min_busbw_gbps"].items()) {
      const int64_t size = parse_bytes(json(size_s), "min_busbw_gbps");
      const double floor = floor_j.get<double>();
      const PerfPoint* hit = nullptr;
      for (const auto& p : points)
        if (p.bytes == size) hit = &p;
      if (!hit) {
        o.fail(fmt::format("no result at {} ({} bytes); widen the sweep", size_s, size));
        continue;
      }
      if (hit->busbw_gbps < floor) {
        o.fail(fmt::format("busbw {:.4g} GB/s at {} is below the floor {:.4g} GB/s",
                           hit->busbw_gbps, size_s, floor));
        o.findings.push_back({"size", size_s, fmt::format("busbw {:.4g} GB/s", hit->busbw_gbps)});
      }
    }
  }
  relative_rules(o, c, b);
  return o;
}

Baseline load_baseline(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(fmt::format("cannot read baseline '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  Baseline b;
  try {
    const json j = json::parse(ss.str());
    for (const auto& c : j.at("checks"))
      b[c.at("name").get<std::string>()] = c.at("metrics").get<std::map<std::string, double>>();
  } catch (const json::exception& e) {
    throw SpecError(
        fmt::format("baseline '{}' is not a `collie accept` JSON report ({}); record one with "
                    "`collie accept --spec ... --json FILE`",
                    path, e.what()));
  }
  return b;
}

AcceptReport run_accept(ProbeContext& ctx, const AcceptSpec& spec, const PerfRunner& perf) {
  AcceptReport rep;
  rep.name = spec.name;
  rep.backend = spec.backend;
  rep.world = ctx.world;
  rep.hosts = ctx.hosts;
  rep.baseline = spec.baseline;
  Baseline base;
  if (!spec.baseline.empty()) base = load_baseline(spec.baseline);
  for (const auto& c : spec.checks) {
    const auto t0 = std::chrono::steady_clock::now();
    CheckOutcome o;
    try {
      const json& p = c.params;
      if (c.kind == "connectivity") {
        ConnectivityOptions opt;
        opt.rounds = p.value("repeats", 1);
        if (p.contains("interval"))
          opt.interval = p["interval"].is_string()
                             ? parse_duration(p["interval"].get<std::string>())
                             : Millis(static_cast<int64_t>(p["interval"].get<double>() * 1000));
        auto r = run_connectivity(ctx, opt);
        if (ctx.rank == 0) o = evaluate_connectivity(c, r);
      } else if (c.kind == "pairwise") {
        PairwiseOptions opt;
        if (p.contains("bytes")) opt.bytes = parse_bytes(p["bytes"], "bytes");
        opt.bw_iters = p.value("iters", opt.bw_iters);
        opt.lat_iters = p.value("latency_iters", opt.lat_iters);
        opt.slow_threshold = p.value("slow_threshold", opt.slow_threshold);
        auto r = run_pairwise(ctx, opt);
        if (ctx.rank == 0) o = evaluate_pairwise(c, r, base);
      } else if (c.kind == "stragglers") {
        StragglerOptions opt;
        opt.iters = p.value("iters", opt.iters);
        opt.warmup = p.value("warmup", opt.warmup);
        if (p.contains("bytes")) opt.bytes = parse_bytes(p["bytes"], "bytes");
        opt.work_per_iter = p.value("work", opt.work_per_iter);
        opt.late_us = p.value("late_us", opt.late_us);
        auto r = run_stragglers(ctx, opt);
        if (ctx.rank == 0) o = evaluate_stragglers(c, r, base);
      } else if (c.kind == "env") {
        auto r = run_env(ctx);
        if (ctx.rank == 0) o = evaluate_env(c, r);
      } else if (c.kind == "perf") {
        if (!perf) throw SpecError("this build has no perf engine for perf checks");
        auto pts = perf(ctx, c);
        if (ctx.rank == 0) o = evaluate_perf(c, pts, base);
      }
    } catch (const SpecError&) {
      throw;
    } catch (const std::exception& e) {
      o = CheckOutcome{};
      o.fail(fmt::format("[Rank {}] the check did not complete: {}", ctx.rank, e.what()));
      o.findings.push_back({"rank", std::to_string(ctx.rank), e.what()});
    }
    o.name = c.name;
    o.kind = c.kind;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (ctx.rank == 0) {
      std::fprintf(stderr, "# accept: %s: %s (%.1f s)\n", c.name.c_str(),
                   o.passed ? "pass" : "FAIL", o.seconds);
      std::fflush(stderr);
    }
    rep.checks.push_back(std::move(o));
  }
  return rep;
}

}  // namespace collie::probes
