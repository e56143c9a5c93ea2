#include "probes/accept.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "comm/rendezvous.h"
#include "core/env.h"
#include "core/error.h"
#include "core/size.h"
#include "probes/link_capacity.h"
#include "reports/json_io.h"
#include "reports/markup.h"
#include "reports/table.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

std::string pct(double dev) { return fmt::format("{:.0f}%", std::fabs(dev) * 100); }

// Findings one by one up to this many broken pairs (a test of 8 ranks reads each); beyond, the
// hosts and at most kFindingsMax more, so a report of thousands of ranks stays one screen.
constexpr size_t kFindingsOneByOne = 64;
constexpr size_t kFindingsMax = 16;

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
        if (drop ? change >= -limit : change <= limit) continue;
        const std::string why = fmt::format(
            "{} {} {} {} the baseline ({:.4g} -> {:.4g}; allowed {})", m, drop ? "fell" : "rose",
            pct(change), drop ? "below" : "above", was, now, pct(limit));
        o.fail(why);
        // busbw@64M blames a size; a plain metric blames the check's measurement as a whole.
        const size_t at = m.find('@');
        o.findings.push_back({at == std::string::npos ? "metric" : "size", m.substr(at + 1), why});
      }
    }
  }
}

// Node-type profiles on a perf sweep: at each size a profile names and the sweep measured, the
// loosest limit over the job's hosts that have one (the slowest node type bounds the job).
template <class Evidence>
void profile_limits(CheckOutcome& o, const AcceptSpec& spec, const std::vector<std::string>& hosts,
                    const std::map<int64_t, const reports::ResultRow*>& by_size,
                    const Evidence& evidence) {
  std::map<int64_t, double> floor, ceiling;
  std::map<int64_t, std::string> floor_by, ceiling_by;
  for (const auto& h : hosts) {
    const NodeProfile* p = spec.profile_for(h);
    if (!p) continue;
    for (const auto& [size, v] : p->min_busbw_gbps)
      if (!floor.count(size) || v < floor[size]) {
        floor[size] = v;
        floor_by[size] = p->name;
      }
    for (const auto& [size, v] : p->max_time_us)
      if (!ceiling.count(size) || v > ceiling[size]) {
        ceiling[size] = v;
        ceiling_by[size] = p->name;
      }
  }
  for (const bool is_floor : {true, false}) {
    for (const auto& [size, limit] : is_floor ? floor : ceiling) {
      const auto it = by_size.find(size);
      if (it == by_size.end()) continue;
      const double v = is_floor ? it->second->busbw_gbps : it->second->time_us;
      if (is_floor ? v >= limit : v <= limit) continue;
      const std::string label = size_label(size);
      const std::string& prof = is_floor ? floor_by[size] : ceiling_by[size];
      o.fail(is_floor ? fmt::format("busbw {} GB/s at {} is below profile '{}' floor {} GB/s",
                                    reports::num(v), label, prof, reports::num(limit))
                      : fmt::format("time {} us at {} is above profile '{}' ceiling {} us",
                                    reports::num(v), label, prof, reports::num(limit)));
      o.findings.push_back({"size", label, evidence(*it->second), "PERF_BELOW_PROFILE", "CRIT",
                            "compare with a known-good node of this type (collie perf), then "
                            "check the slowest rank's host"});
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
  const auto& broken = r.broken();
  o.metrics["broken_pairs"] = static_cast<double>(broken.size());
  o.metrics["missing_ranks"] = static_cast<double>(r.missing_ranks.size());
  auto pair_who = [&](const PairStatus& p) {
    return fmt::format("{} ({}) <-> {} ({})", p.a, r.hosts.at(p.a), p.b, r.hosts.at(p.b));
  };
  if (c.rules.value("all_reachable", false) && !r.all_reachable()) {
    o.fail(fmt::format("{} of {} pairs unreachable{}", broken.size(), r.pair_count,
                       r.missing_ranks.empty() ? ""
                                               : fmt::format(", ranks {} did not report",
                                                             format_ranks(r.missing_ranks))));
    // The hosts first; each pair when there are few, else the pairs of the hosts not named and
    // how many more (the report's JSON lists them all).
    const auto isolated = r.isolated_hosts();
    for (const auto& h : isolated)
      o.findings.push_back({"host", h, "reaches no other host (every cross-host pair broken)"});
    std::set<std::string> gone;
    for (const auto& h : isolated) gone.insert(h.substr(0, h.find(" (")));
    size_t listed = 0, rest = 0;
    for (const auto& p : broken) {
      const bool explained = gone.count(r.hosts.at(p.a)) || gone.count(r.hosts.at(p.b));
      if (broken.size() > kFindingsOneByOne && (explained || listed >= kFindingsMax)) {
        rest += explained ? 0 : 1;
        continue;
      }
      o.findings.push_back({"pair", pair_who(p), p.error});
      ++listed;
    }
    if (rest > 0)
      o.findings.push_back({"pair", fmt::format("{} more pairs", rest),
                            "broken as well (every pair is in the report's JSON)"});
    if (r.missing_ranks.size() <= kFindingsMax) {
      for (int m : r.missing_ranks)
        o.findings.push_back({"rank", fmt::format("{} ({})", m, r.hosts.at(m)),
                              "did not report its results through the store"});
    } else {
      std::map<std::string, std::vector<int>> by_host;
      for (int m : r.missing_ranks) by_host[r.hosts.at(m)].push_back(m);
      for (const auto& [h, ranks] : by_host)
        o.findings.push_back({"rank", fmt::format("{} ({})", format_ranks(ranks), h),
                              "did not report their results through the store"});
    }
  }
  if (c.rules.contains("max_rtt_us")) {
    const double lim = c.rules["max_rtt_us"].get<double>();
    size_t n = 0;
    for (const auto& p : r.slow_pairs) {
      if (!p.ok || p.rtt_us <= lim) continue;
      if (++n > kFindingsMax) continue;
      o.fail(
          fmt::format("pair {} <-> {} round trip {:.0f} us > {:.0f} us", p.a, p.b, p.rtt_us, lim));
      o.findings.push_back({"pair", pair_who(p), fmt::format("round trip {:.0f} us", p.rtt_us)});
    }
    if (n > kFindingsMax)
      o.fail(
          fmt::format("{} more pairs with a round trip > {:.0f} us (every one in the report's "
                      "JSON)",
                      n - kFindingsMax, lim));
  }
  return o;
}

PairwiseOptions pairwise_options(const CheckSpec& c, const AcceptSpec& spec,
                                 const std::vector<std::string>& hosts) {
  const json& p = c.params;
  PairwiseOptions opt;
  if (p.contains("bytes")) opt.bytes = parse_bytes(p["bytes"], "bytes");
  opt.bw_iters = p.value("iters", opt.bw_iters);
  opt.lat_iters = p.value("latency_iters", opt.lat_iters);
  opt.slow_threshold = p.value("slow_threshold", opt.slow_threshold);
  opt.crit_drop = p.value("crit_drop", opt.crit_drop);
  opt.noise_k = p.value("noise_k", opt.noise_k);
  opt.schedule = p.value("schedule", opt.schedule);
  opt.rotation = p.value("rotation", opt.rotation);
  opt.confirm = p.value("confirm", opt.confirm);
  opt.capacity_fraction = p.value("capacity_fraction", opt.capacity_fraction);
  opt.reverse_fraction = p.value("reverse_fraction", opt.reverse_fraction);
  opt.min_link_gbps = c.rules.value("min_link_gbps", 0.0);
  opt.max_latency_us = c.rules.value("max_latency_us", 0.0);
  for (const auto& h : hosts) {
    const NodeProfile* prof = spec.profile_for(h);
    if (!prof) continue;
    if (prof->min_link_gbps > 0) opt.host_floor_gbps[h] = prof->min_link_gbps;
    if (prof->max_latency_us > 0) opt.host_max_latency_us[h] = prof->max_latency_us;
  }
  return opt;
}

CheckOutcome evaluate_pairwise(const CheckSpec& c, const PairwiseResult& r, const Baseline& b) {
  CheckOutcome o = start(c, r.to_json(), r.to_text());
  const auto& iso = r.isolation;
  const std::vector<double> lat = r.latency_us.values(), vals = r.bw_gbps.values();
  o.metrics["median_gbps"] = iso.reference.gbps > 0 ? iso.reference.gbps : median(vals);
  o.metrics["min_link_gbps"] = vals.empty() ? 0 : *std::min_element(vals.begin(), vals.end());
  o.metrics["median_latency_us"] = lat.empty() ? 0 : median(lat);
  o.metrics["noise_gbps"] = iso.reference.noise_gbps;
  o.metrics["rounds"] = iso.rounds;
  if (!r.missing_ranks.empty())
    o.fail(fmt::format("ranks {} did not report", format_ranks(r.missing_ranks)));
  if (iso.survey_mostly_starved())
    o.inconclusive(iso.survey_starved_text() +
                   ": the survey cannot clear the cluster; re-run on CPUs that are not "
                   "oversubscribed");
  // A link nothing could pin on one of its hosts (no known-good host to test them against: 2
  // hosts) counts as a named host as well: one of the two is bad. Inconclusive findings decide
  // no rule; they make the check inconclusive unless something fails it.
  std::vector<const IsolationFinding*> hosts, links;
  for (const auto& f : iso.findings) {
    if (f.severity == Verdict::Inconclusive) {
      o.inconclusive(fmt::format("{} {}: {}", fault_is_host(f.fault) ? "host" : "link",
                                 r.finding_label(f), f.reason));
      o.findings.push_back({fault_is_host(f.fault) ? "host" : "link", r.finding_label(f), f.reason,
                            fault_code(f.fault), verdict_name(f.severity), f.next_step});
      continue;
    }
    (fault_is_host(f.fault) ? hosts : links).push_back(&f);
    if (!f.separated) hosts.push_back(&f);
  }
  const bool absolute_rule =
      c.rules.contains("min_link_gbps") || c.rules.contains("max_latency_us");
  // Each named host / link breaks a rule when its kind is over its allowance, it broke an
  // absolute limit the rules set, or it is far below what its hosts can do or its reverse
  // direction (those two, like #wrong for perf, need no rule); the rule fails the check when
  // that finding is CRIT, else it warns. A finding is listed once even when it breaks two rules.
  std::set<const IsolationFinding*> listed, limit_broken;
  auto judge_kind = [&](const std::vector<const IsolationFinding*>& named, const char* rule,
                        const char* what) {
    const bool over =
        c.rules.contains(rule) && static_cast<int64_t>(named.size()) > c.rules[rule].get<int64_t>();
    for (const IsolationFinding* f : named) {
      const std::string who = r.finding_label(*f);
      std::vector<std::string> lines;
      // An absolute limit, far below what its hosts can do, or a direction far below its
      // reverse: said once per finding, whichever list it is in.
      const bool abs = absolute_rule && f->absolute;
      const bool far = f->rule == Rule::Capacity || f->rule == Rule::Reverse;
      if ((abs || far) && limit_broken.insert(f).second)
        lines.push_back(abs ? fmt::format("{} {} is outside the absolute limits ({})", what, who,
                                          fault_code(f->fault))
                            : fmt::format("{} {} is far below {} ({})", f->b < 0 ? "host" : "link",
                                          who,
                                          f->rule == Rule::Capacity ? "what its hosts can do"
                                                                    : "its reverse direction",
                                          fault_code(f->fault)));
      if (over)
        lines.push_back(fmt::format("{} {} named ({}{}; {} allows {})", what, who,
                                    fault_code(f->fault),
                                    f->separated ? "" : ", one of its two hosts is bad", rule,
                                    c.rules[rule].get<int64_t>()));
      for (auto& line : lines) {
        if (f->severity == Verdict::Crit)
          o.fail(std::move(line));
        else
          o.warn(std::move(line));
      }
      if (lines.empty() || !listed.insert(f).second) continue;
      // Old readers look for "median cross-host link" in a slow host's evidence.
      const std::string evidence =
          fmt::format("{}{}", fault_is_host(f->fault) ? "median cross-host link " : "", f->reason);
      o.findings.push_back({fault_is_host(f->fault) ? "host" : "link", who, evidence,
                            fault_code(f->fault), verdict_name(f->severity), f->next_step});
    }
  };
  judge_kind(hosts, "max_slow_hosts", "host");
  judge_kind(links, "max_slow_links", "link");
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

CheckOutcome evaluate_perf(const CheckSpec& c, const PerfCheckResult& r,
                           const std::vector<std::string>& hosts, const Baseline& b,
                           const AcceptSpec* spec) {
  const std::string coll = c.params.value("collective", "");
  std::string text = fmt::format("# perf {} ({} rows, out of place)\n", coll, r.rows.size());
  text += reports::format_column_header();
  std::map<int64_t, const reports::ResultRow*> by_size;
  for (const auto& row : r.rows) {
    text += reports::format_row(&row, nullptr) + "\n";
    by_size[row.size_bytes] = &row;
  }
  CheckOutcome o =
      start(c, json{{"collective", coll}, {"errors", r.errors}, {"missing_ranks", r.missing_ranks}},
            text);
  o.rows = r.rows;
  auto host_of = [&](int rank) {
    return rank >= 0 && rank < static_cast<int>(hosts.size()) ? hosts[rank] : std::string("?");
  };
  // What a failing size looks like: its numbers and the rank that held it back.
  auto evidence = [&](const reports::ResultRow& row) {
    std::string s = fmt::format("busbw {} GB/s, time {} us", reports::num(row.busbw_gbps),
                                reports::num(row.time_us));
    if (row.rank_time_us.size() > 1 && row.slowest_rank >= 0)
      s += fmt::format("; slowest rank {} ({}) {} us vs median rank {} us", row.slowest_rank,
                       host_of(row.slowest_rank), reports::num(row.rank_time_us[row.slowest_rank]),
                       reports::num(median(row.rank_time_us)));
    return s;
  };
  for (const auto& e : r.errors) {
    o.fail("sweep failed on " + e);
    o.findings.push_back({"rank", e.substr(0, e.find(':')), e.substr(e.find(':') + 2)});
  }
  if (!r.missing_ranks.empty())
    o.fail(fmt::format("ranks {} did not report", format_ranks(r.missing_ranks)));
  for (const auto& row : r.rows) {
    const std::string size = size_label(row.size_bytes);
    o.metrics["busbw@" + size] = row.busbw_gbps;
    o.metrics["time_us@" + size] = row.time_us;
    if (row.wrong <= 0) continue;
    o.fail(fmt::format("{} wrong elements at {} (#wrong must be 0)", row.wrong, size));
    o.findings.push_back(
        {"size", size,
         fmt::format("{} wrong elements, first on rank {} ({}) at element {}", row.wrong,
                     row.wrong_rank, host_of(row.wrong_rank), row.wrong_offset)});
  }
  for (const bool floor : {true, false}) {
    const char* rule = floor ? "min_busbw_gbps" : "max_time_us";
    if (!c.rules.contains(rule)) continue;
    for (const auto& [size_s, limit_j] : c.rules[rule].items()) {
      const int64_t size = parse_bytes(json(size_s), rule);
      const double limit = limit_j.get<double>();
      const auto it = by_size.find(size);
      if (it == by_size.end()) {
        o.fail(fmt::format("{}: no result at {}", rule, size_s));
        continue;
      }
      const reports::ResultRow& row = *it->second;
      const double v = floor ? row.busbw_gbps : row.time_us;
      if (floor ? v >= limit : v <= limit) continue;
      o.fail(floor ? fmt::format("busbw {} GB/s at {} is below the floor {} GB/s", reports::num(v),
                                 size_s, reports::num(limit))
                   : fmt::format("time {} us at {} is above the ceiling {} us", reports::num(v),
                                 size_s, reports::num(limit)));
      o.findings.push_back({"size", size_label(size), evidence(row)});
    }
  }
  if (spec) profile_limits(o, *spec, hosts, by_size, evidence);
  relative_rules(o, c, b);
  return o;
}

void add_capacity(CheckOutcome& o, const reports::LinkCapacity& c) {
  o.text += reports::format_capacity_lines(o.rows, c);
  o.details["capacity"] = reports::capacity_json(c, o.rows);
  // One metric per check: the collective furthest from what the link can do.
  for (const auto& s : reports::capacity_shares(o.rows, c))
    if (!o.metrics.count("capacity_pct") || s.percent < o.metrics["capacity_pct"])
      o.metrics["capacity_pct"] = s.percent;
}

Baseline load_baseline(const std::string& path) {
  try {
    return reports::read_accept_metrics(path);
  } catch (const InvalidArgument& e) {
    throw SpecError(
        fmt::format("baseline: {}; record one with `collie accept --spec ... -J FILE`", e.what()),
        "/baseline");
  }
}

AcceptReport run_accept(ProbeContext& ctx, const AcceptSpec& spec,
                        const std::function<void(const AcceptReport&)>& save_if_hung) {
  AcceptReport rep;
  rep.name = spec.name;
  rep.backend = ctx.backend;  // --backend may override the spec's
  rep.world = ctx.world;
  rep.hosts = ctx.hosts;
  rep.baseline = spec.baseline;
  Baseline base;
  if (!spec.baseline.empty()) base = load_baseline(spec.baseline);
  std::optional<reports::LinkCapacity> capacity;
  for (size_t i = 0; i < spec.checks.size(); ++i) {
    const CheckSpec& c = spec.checks[i];
    const auto t0 = std::chrono::steady_clock::now();
    if (ctx.rank == 0 && save_if_hung) {
      // Runs on the perf watchdog's thread while this one is stuck: build from copies.
      ctx.on_hang = [&rep, &spec, &save_if_hung, i, t0](const std::string& why) {
        AcceptReport partial = rep;
        for (size_t j = i; j < spec.checks.size(); ++j) {
          CheckOutcome o;
          o.name = spec.checks[j].name;
          o.kind = spec.checks[j].kind;
          if (j == i) {
            o.fail("hung: " + why + "; the process was ended (backend past its deadline)");
            o.seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          } else {
            o.fail("not run: an earlier check hung");
          }
          partial.checks.push_back(std::move(o));
        }
        save_if_hung(partial);
      };
    }
    CheckOutcome o;
    try {
      const json& p = c.params;
      if (c.kind == "connectivity") {
        ConnectivityOptions opt;
        opt.rounds = p.value("repeats", 1);
        opt.report_rtt_us = c.rules.value("max_rtt_us", 0.0);
        if (p.contains("interval"))
          opt.interval = p["interval"].is_string()
                             ? parse_duration(p["interval"].get<std::string>())
                             : Millis(static_cast<int64_t>(p["interval"].get<double>() * 1000));
        auto r = run_connectivity(ctx, opt);
        if (ctx.rank == 0) o = evaluate_connectivity(c, r);
      } else if (c.kind == "pairwise") {
        auto r = run_pairwise(ctx, pairwise_options(c, spec, ctx.hosts));
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
        auto r = run_perf_check(ctx, c);
        if (ctx.rank == 0) {
          o = evaluate_perf(c, r, ctx.hosts, base, &spec);
          // "Is this normal?", measured once per run after the first sweep, none running.
          if (!capacity && !r.rows.empty())
            capacity = link_capacity(r.meta, ctx.env ? *ctx.env : Env::process(), r.store_host);
          if (capacity) add_capacity(o, *capacity);
        }
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
    ctx.on_hang = nullptr;
    rep.checks.push_back(std::move(o));
  }
  return rep;
}

}  // namespace collie::probes
