// PairwiseResult: building it from a full survey's rows, handing it to the isolation engine,
// and rendering it (text and JSON). The measuring side is pairwise.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "comm/rendezvous.h"
#include "probes/pairwise.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

// Up to this many ranks the JSON also carries the dense rank x rank matrices (what scripts read
// as j["bandwidth_gbps"][i][j]); beyond, the sparse lists and the matrix by host only.
constexpr int kDenseJsonRanks = 64;

json matrix_json(const RankMatrix& m) {
  json rows = json::array();
  for (int i = 0; i < m.size(); ++i) {
    json row = json::array();
    for (int j = 0; j < m.size(); ++j) {
      if (std::isnan(m.at(i, j)))
        row.push_back(nullptr);
      else
        row.push_back(m.at(i, j));
    }
    rows.push_back(row);
  }
  return rows;
}

// [[i, j, value], ...] over the measured cells, row by row.
json cells_json(const RankMatrix& m) {
  json out = json::array();
  m.for_each([&](int i, int j, double x) { out.push_back({i, j, x}); });
  return out;
}

json deviations_json(const std::vector<Deviation>& v) {
  json out = json::array();
  for (const auto& d : v) {
    json e{{"name", d.name}, {"value", d.value}, {"deviation", d.deviation}};
    if (d.a >= 0) {
      e["from"] = d.a;
      e["to"] = d.b;
    }
    out.push_back(e);
  }
  return out;
}

const char* finding_title(Fault f) {
  switch (f) {
    case Fault::HostSlow:
      return "SLOW HOST";
    case Fault::HostDown:
      return "DEAD HOST";
    case Fault::HostFlapping:
      return "FLAPPING HOST";
    case Fault::LinkSlow:
      return "SLOW LINK";
    case Fault::LinkDown:
      return "DEAD LINK";
    case Fault::LinkFlapping:
      return "FLAPPING LINK";
    case Fault::HostInconclusive:
      return "INCONCLUSIVE HOST";
    case Fault::LinkInconclusive:
      return "INCONCLUSIVE LINK";
  }
  return "?";
}

std::string capacity_text(const HostCapacity& c) {
  std::string line = c.line_gbps > 0   ? fmt::format("{} {:.0f} Mb/s", c.iface, c.line_gbps * 8e3)
                     : c.iface.empty() ? "data interface unknown"
                                       : fmt::format("{} states no speed", c.iface);
  return fmt::format("loopback {}, {}",
                     c.loopback_gbps > 0 ? fmt::format("{:.3g} GB/s", c.loopback_gbps)
                                         : std::string("not measured"),
                     line);
}

}  // namespace

json capacity_json(const HostCapacity& c) {
  return {{"loopback_gbps", c.loopback_gbps}, {"line_gbps", c.line_gbps}, {"iface", c.iface}};
}

HostCapacity capacity_from_json(const json& j) {
  HostCapacity c;
  c.loopback_gbps = j.value("loopback_gbps", 0.0);
  c.line_gbps = j.value("line_gbps", 0.0);
  c.iface = j.value("iface", "");
  return c;
}

std::string PairwiseResult::unit_label(int unit) const {
  if (unit < 0 || unit >= static_cast<int>(units.size())) return fmt::format("unit {}", unit);
  if (unit < static_cast<int>(unit_labels.size())) return unit_labels[unit];
  return host_label(units[unit], hosts);
}

RankMatrix PairwiseResult::unit_matrix(const RankMatrix& by_rank) const {
  RankMatrix out(static_cast<int>(units.size()));
  std::map<std::pair<int, int>, std::vector<double>> cells;
  by_rank.for_each([&](int i, int j, double x) {
    if (i >= static_cast<int>(unit_of.size()) || j >= static_cast<int>(unit_of.size())) return;
    const int u = unit_of[i], v = unit_of[j];
    if (u != v && u >= 0 && v >= 0) cells[{u, v}].push_back(x);
  });
  for (const auto& [k, vals] : cells) out.set(k.first, k.second, median(vals));
  return out;
}

std::string PairwiseResult::finding_label(const IsolationFinding& f) const {
  if (f.b < 0) return unit_label(f.a);
  return fmt::format("{} <-> {}", unit_label(f.a), unit_label(f.b));
}

std::vector<Deviation> PairwiseResult::slow_hosts() const {
  std::vector<Deviation> out;
  for (const auto& f : isolation.findings) {
    if (!fault_is_host(f.fault)) continue;
    Deviation d;
    d.name = finding_label(f);
    d.value = f.value_gbps;
    d.deviation = -f.effect;
    out.push_back(d);
  }
  return out;
}

std::vector<Deviation> PairwiseResult::slow_links() const {
  std::vector<Deviation> out;
  for (const auto& f : isolation.findings) {
    if (fault_is_host(f.fault)) continue;
    Deviation d;
    d.name = finding_label(f);
    d.value = f.value_gbps;
    d.deviation = -f.effect;
    d.a = unit_rank.at(f.a);
    d.b = unit_rank.at(f.b);
    out.push_back(d);
  }
  return out;
}

Verdict PairwiseResult::verdict() const {
  Verdict v = isolation.verdict();
  if (!missing_ranks.empty()) v = Verdict::Crit;
  return v;
}

namespace {

std::string direction_label(const PairwiseResult& r, const IsolationFinding& f) {
  if (f.from < 0) return "";
  return fmt::format("{} -> {}", r.unit_label(f.from), r.unit_label(f.to));
}

}  // namespace

json PairwiseResult::to_json() const {
  json j;
  j["probe"] = "pairwise";
  j["world_size"] = world;
  j["hosts"] = hosts;
  j["bytes"] = bytes;
  j["slow_threshold"] = slow_threshold;
  j["verdict"] = verdict_name(verdict());
  j["seconds"] = seconds;
  if (world <= kDenseJsonRanks) {
    j["bandwidth_gbps"] = matrix_json(bw_gbps);
    j["latency_us"] = matrix_json(latency_us);
  }
  j["rank_cells"] = {{"bandwidth_gbps", cells_json(bw_gbps)},
                     {"latency_us", cells_json(latency_us)}};
  j["host_matrix"] = {{"units", unit_labels},
                      {"bandwidth_gbps", cells_json(unit_matrix(bw_gbps))},
                      {"latency_us", cells_json(unit_matrix(latency_us))}};
  j["host_scores"] = deviations_json(host_scores());
  j["slow_hosts"] = deviations_json(slow_hosts());
  j["slow_links"] = deviations_json(slow_links());
  j["errors"] = errors;
  j["missing_ranks"] = missing_ranks;
  const auto& iso = isolation;
  json findings = json::array();
  for (const auto& f : iso.findings) {
    json ev = json::array();
    for (const auto& o : f.evidence)
      ev.push_back({{"round", o.round},
                    {"partner", unit_label(o.partner)},
                    {"gbps", o.gbps},
                    {"latency_us", o.lat_us < 0 ? json(nullptr) : json(o.lat_us)},
                    {"reference_gbps", o.ref_gbps},
                    {"bad", o.bad},
                    {"starved", o.starved},
                    {"behind", o.behind},
                    {"cpu_wait", o.cpu_wait},
                    {"why", o.why}});
    findings.push_back({{"code", fault_code(f.fault)},
                        {"severity", verdict_name(f.severity)},
                        {"kind", fault_is_host(f.fault) ? "host" : "link"},
                        {"who", finding_label(f)},
                        {"rule", rule_name(f.rule)},
                        {"direction", direction_label(*this, f)},
                        {"separated", f.separated},
                        {"value_gbps", f.value_gbps},
                        {"effect", f.effect},
                        {"noise_gbps", f.noise_gbps},
                        {"confirmations", f.confirmations},
                        {"remeasured", f.remeasured},
                        {"reason", f.reason},
                        {"next_step", f.next_step},
                        {"evidence", ev}});
  }
  j["isolation"] = {{"schedule", iso.schedule},
                    {"units", units},
                    {"rounds", iso.rounds},
                    {"survey_rounds", iso.survey_rounds},
                    {"pairs_measured", iso.pairs_measured},
                    {"reference_gbps", iso.reference.gbps},
                    {"noise_gbps", iso.reference.noise_gbps},
                    {"suspect_units", iso.suspects},
                    {"suspect_links", iso.suspect_links},
                    {"cleared", iso.cleared},
                    {"inconclusive", iso.inconclusive},
                    {"survey_measured", iso.survey_measured},
                    {"survey_starved", iso.survey_starved},
                    {"phases", iso.phases},
                    {"findings", findings}};
  json caps = json::array();
  for (size_t u = 0; u < capacity.size() && u < units.size(); ++u) {
    json c = capacity_json(capacity[u]);
    c["unit"] = units[u];
    caps.push_back(std::move(c));
  }
  j["capacity"] = caps;
  return j;
}

namespace {

// Lines of the text that list items one by one stop here; the JSON has them all.
constexpr size_t kTextListMax = 16;

// "# what the hosts can do: ...": each host up to kTextListMax, a summary beyond.
std::string capacity_line(const std::vector<HostCapacity>& capacity,
                          const std::vector<std::string>& units) {
  std::string caps;
  std::vector<std::pair<double, size_t>> loop;
  std::map<std::string, int> lines;  // "eth0 10000 Mb/s" -> hosts
  for (size_t u = 0; u < capacity.size() && u < units.size(); ++u) {
    const HostCapacity& c = capacity[u];
    if (c.loopback_gbps <= 0 && c.line_gbps <= 0) continue;
    caps += fmt::format("{}{}: {}", caps.empty() ? "" : "; ", units[u], capacity_text(c));
    if (c.loopback_gbps > 0) loop.emplace_back(c.loopback_gbps, u);
    ++lines[c.line_gbps > 0   ? fmt::format("{} {:.0f} Mb/s", c.iface, c.line_gbps * 8e3)
            : c.iface.empty() ? std::string("data interface unknown")
                              : fmt::format("{} states no speed", c.iface)];
  }
  if (caps.empty()) return "";
  if (capacity.size() <= kTextListMax) return "# what the hosts can do: " + caps + "\n";
  std::string out =
      fmt::format("# what the hosts can do: {} of {} hosts reported", loop.size(), capacity.size());
  if (!loop.empty()) {
    std::vector<double> v;
    for (const auto& [x, u] : loop) v.push_back(x);
    const auto lo = *std::min_element(loop.begin(), loop.end());
    out += fmt::format("; loopback median {:.3g} GB/s, lowest {:.3g} GB/s ({})", median(v),
                       lo.first, units[lo.second]);
  }
  for (const auto& [what, n] : lines) out += fmt::format("; {}: {} host(s)", what, n);
  return out + "\n";
}

}  // namespace

std::string PairwiseResult::to_text() const {
  const size_t nhosts = std::set<std::string>(hosts.begin(), hosts.end()).size();
  std::string out = fmt::format(
      "# pairwise: {} ranks on {} host(s), {} bytes per bandwidth message\n", world, nhosts, bytes);
  const auto& iso = isolation;
  out += fmt::format(
      "# schedule {}: {} {}, {} round(s), {} pair measurement(s), {:.1f} s (every pair of "
      "ranks: {} rounds)\n",
      iso.schedule, units.size(), nhosts > 1 ? "hosts" : "ranks standing in for hosts", iso.rounds,
      iso.pairs_measured, seconds, world % 2 == 0 ? world - 1 : world);
  for (const auto& p : iso.phases) out += "#   " + p + "\n";
  out += capacity_line(capacity, units);
  // What is wrong first: the findings, the ranks that did not report, the failed measurements;
  // then the matrices, by host.
  for (const auto& f : iso.findings) {
    out += fmt::format("{}: {} [{} {}]: {}\n", finding_title(f.fault), finding_label(f),
                       fault_code(f.fault), verdict_name(f.severity), f.reason);
    std::string ev;
    for (const auto& o : f.evidence) {
      const std::string when = o.round == 0 ? "survey" : fmt::format("round {}", o.round);
      ev += fmt::format(
          "{}{} vs {} {}", ev.empty() ? "" : "; ", when, unit_label(o.partner),
          o.why.empty() ? fmt::format("{:.4g} GB/s ok (reference {:.4g})", o.gbps, o.ref_gbps)
          : o.bad
              ? o.why + (o.cpu_wait >= 0.01 ? fmt::format(" (its ranks waited for a CPU {:.0f}%)",
                                                          o.cpu_wait * 100)
                                            : "")
          : o.starved
              ? fmt::format("{:.4g} GB/s CPU-starved (waited {:.0f}%, "
                            "reference {:.4g}{})",
                            o.gbps, o.cpu_wait * 100, o.ref_gbps, o.behind ? ", far behind it" : "")
              : fmt::format("{:.4g} GB/s", o.gbps));
    }
    out += "    evidence: " + ev + "\n";
    out += fmt::format("    next step: {}\n", f.next_step);
  }
  if (!missing_ranks.empty())
    out += fmt::format("MISSING: ranks {} did not report\n", format_ranks(missing_ranks));
  for (size_t i = 0; i < errors.size() && i < kTextListMax; ++i)
    out += fmt::format("# failed measurement: {}\n", errors[i]);
  if (errors.size() > kTextListMax)
    out += fmt::format("# ... and {} more failed measurements (every one in the JSON's errors)\n",
                       errors.size() - kTextListMax);
  if (nhosts > 1) {
    out += "# bandwidth (GB/s, by host: row = sender, column = receiver; X = not measured)\n";
    out += heat_map(unit_matrix(bw_gbps), true, "GB/s", unit_labels);
    out += "# latency (us, one way, by host)\n";
    out += heat_map(unit_matrix(latency_us), false, "us", unit_labels);
  } else {
    out += "# bandwidth (GB/s, row = sender, column = receiver; X = not measured)\n";
    out += heat_map(bw_gbps, true, "GB/s",
                    world > kHeatMapFullRows ? unit_labels : std::vector<std::string>{});
    out += "# latency (us, one way)\n";
    out += heat_map(latency_us, false, "us",
                    world > kHeatMapFullRows ? unit_labels : std::vector<std::string>{});
  }
  const Verdict v = verdict();
  if (iso.survey_mostly_starved())
    out += "INCONCLUSIVE SURVEY: " + iso.survey_starved_text() +
           ": a starved measurement decides nothing, so this run cannot clear the cluster; re-run "
           "the probe when the hosts' CPUs are not oversubscribed (fewer ranks per host, or "
           "without the competing load)\n";
  if (v == Verdict::Ok)
    out += fmt::format(
        "OK: nothing named; {} suspect(s) cleared by re-measurement (reference {:.4g} GB/s, "
        "noise {:.2g} GB/s)\n",
        iso.cleared, iso.reference.gbps, iso.reference.noise_gbps);
  else
    out += fmt::format("VERDICT: {}: {} host(s) and {} link(s) named{}, {} suspect(s) cleared\n",
                       verdict_name(v), slow_hosts().size(), slow_links().size(),
                       iso.inconclusive > 0
                           ? fmt::format(" ({} of {} findings inconclusive: re-run to decide)",
                                         iso.inconclusive, iso.findings.size())
                           : "",
                       iso.cleared);
  return out;
}

PairwiseResult merge_pairwise(int world, const std::vector<std::string>& hosts,
                              const std::vector<std::optional<std::string>>& rows,
                              const PairwiseOptions& opts) {
  PairwiseResult res;
  res.world = world;
  res.hosts = hosts;
  res.bytes = opts.bytes;
  res.slow_threshold = opts.slow_threshold;
  res.bw_gbps = RankMatrix(world);
  res.latency_us = RankMatrix(world);
  for (int r = 0; r < static_cast<int>(rows.size()) && r < world; ++r) {
    if (!rows.at(r)) {
      res.missing_ranks.push_back(r);
      continue;
    }
    for (const auto& e : json::parse(*rows[r])) {
      const int peer = e.at("peer").get<int>();
      if (e.contains("capacity") && !res.rank_capacity.count(r))
        res.rank_capacity[r] = capacity_from_json(e.at("capacity"));
      if (!e.at("error").get<std::string>().empty()) {
        if (r < peer || !rows.at(peer))
          res.errors.push_back(fmt::format("{} ({}) <-> {} ({}): rank {}: {}", r, hosts.at(r), peer,
                                           hosts.at(peer), r, e.at("error").get<std::string>()));
        continue;
      }
      if (!e.at("bw_gbps").is_null()) res.bw_gbps.set(r, peer, e.at("bw_gbps").get<double>());
      if (e.contains("samples"))
        res.survey_samples[{r, peer}] = e.at("samples").get<std::vector<double>>();
      if (e.contains("cpu_wait")) res.survey_cpu_wait[{r, peer}] = e.at("cpu_wait").get<double>();
      if (!e.at("lat_us").is_null()) {
        const double lat = e.at("lat_us").get<double>();
        res.latency_us.set(r, peer, lat);
        if (std::isnan(res.latency_us.at(peer, r))) res.latency_us.set(peer, r, lat);
      }
    }
  }
  return res;
}

IsolateOptions isolate_options(const PairwiseOptions& o, const std::vector<std::string>& units) {
  IsolateOptions io;
  io.schedule = o.schedule;
  io.rotation = std::max(o.rotation, 0);
  io.confirm = std::max(o.confirm, 1);
  io.thresholds.warn_drop = o.slow_threshold;
  io.thresholds.crit_drop = o.crit_drop;
  io.thresholds.noise_k = o.noise_k;
  io.thresholds.capacity_fraction = o.capacity_fraction;
  io.thresholds.reverse_fraction = o.reverse_fraction;
  io.thresholds.names = units;
  for (const auto& host : units) {
    const auto f = o.host_floor_gbps.find(host);
    io.thresholds.floor_gbps.push_back(f != o.host_floor_gbps.end() ? f->second : o.min_link_gbps);
    const auto l = o.host_max_latency_us.find(host);
    io.thresholds.max_latency_us.push_back(l != o.host_max_latency_us.end() ? l->second
                                                                            : o.max_latency_us);
  }
  return io;
}

void isolate_result(PairwiseResult& r, const PairwiseOptions& o, const MeasureRound& remeasure,
                    int survey_rounds) {
  const bool single = std::set<std::string>(r.hosts.begin(), r.hosts.end()).size() <= 1;
  r.unit_of.assign(r.world, -1);
  std::vector<std::string> unit_hosts;
  std::unordered_map<std::string, int> unit_of_host;
  r.units.clear();
  r.unit_rank.clear();
  for (int i = 0; i < r.world; ++i) {
    if (!single) {
      const auto it = unit_of_host.find(r.hosts.at(i));
      if (it != unit_of_host.end()) {
        r.unit_of[i] = it->second;
        continue;
      }
      unit_of_host[r.hosts.at(i)] = static_cast<int>(r.units.size());
    }
    r.unit_of[i] = static_cast<int>(r.units.size());
    r.units.push_back(single ? fmt::format("rank {}", i) : r.hosts.at(i));
    unit_hosts.push_back(r.hosts.empty() ? "" : r.hosts.at(i));
    r.unit_rank.push_back(i);
  }
  const std::vector<int>& unit_of = r.unit_of;
  {
    const HostIndex index(r.hosts);
    r.unit_labels.clear();
    for (const auto& u : r.units) r.unit_labels.push_back(single ? u : index.label(u));
  }
  // What each unit's host can do: its measuring rank's report (a full survey's rows; the
  // re-measurement rounds fill in the rest as the ranks report).
  r.capacity.assign(r.units.size(), HostCapacity{});
  for (size_t u = 0; u < r.units.size(); ++u) {
    const auto it = r.rank_capacity.find(r.unit_rank[u]);
    if (it != r.rank_capacity.end()) r.capacity[u] = it->second;
  }
  // A full survey: one sample per pair of units, from every directed rank pair between them.
  // (Every rank pair was measured, so this walks all N^2 / 2 of them once; only the unit pairs
  // are kept.)
  std::map<std::pair<int, int>, LinkSample> by;
  if (survey_rounds > 0) {
    for (int i = 0; i < r.world; ++i)
      for (int j = i + 1; j < r.world; ++j) {
        const int ua = std::min(unit_of[i], unit_of[j]), ub = std::max(unit_of[i], unit_of[j]);
        if (ua == ub) continue;
        LinkSample& s = by[{ua, ub}];
        s.a = ua;
        s.b = ub;
        s.cap_a = r.capacity.at(ua);
        s.cap_b = r.capacity.at(ub);
        for (const auto& [x, y] : {std::pair{i, j}, std::pair{j, i}}) {
          // Rank x timed what it sent to y: the direction of x's unit.
          std::vector<double>& dir = unit_of[x] == ua ? s.ab : s.ba;
          if (const auto w = r.survey_cpu_wait.find({x, y}); w != r.survey_cpu_wait.end())
            s.cpu_wait = std::max(s.cpu_wait, w->second);
          const auto it = r.survey_samples.find({x, y});
          if (it != r.survey_samples.end() && !it->second.empty()) {
            dir.insert(dir.end(), it->second.begin(), it->second.end());
          } else if (!std::isnan(r.bw_gbps.at(x, y))) {
            dir.push_back(r.bw_gbps.at(x, y));
          } else if (s.error.empty()) {
            s.error = fmt::format("ranks {} -> {}: no result", x, y);
          }
        }
        if (!std::isnan(r.latency_us.at(i, j)))
          s.lat_us = std::max(s.lat_us, r.latency_us.at(i, j));
      }
  }
  std::vector<LinkSample> survey;
  for (auto& [k, s] : by) {
    if (!s.error.empty()) {
      s.ab.clear();
      s.ba.clear();
    }
    survey.push_back(std::move(s));
  }
  by.clear();
  IsolateOptions io = isolate_options(o, unit_hosts);
  io.thresholds.names = r.units;
  if (survey_rounds > 0) io.schedule = "full";
  r.isolation = isolate(static_cast<int>(r.units.size()), io, remeasure, survey, survey_rounds);
}

}  // namespace collie::probes
