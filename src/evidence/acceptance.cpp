// collie's acceptance evidence: `collie accept -J` reports (collie.accept.v1, whose checks carry
// their probe's own JSON in "details" and perf checks their rows) and `collie probe -J` files.
// Pairwise fault codes become SLOW_HOST / SLOW_LINK / UNREACHABLE, the stragglers probe's named
// ranks STRAGGLER, broken connectivity UNREACHABLE, perf checks' wrong data WRONG_DATA.
#include <fmt/format.h>

#include <map>

#include "core/error.h"
#include "core/printable.h"
#include "evidence/readers.h"
#include "reports/json_io.h"

namespace collie::evidence::detail {
namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

double num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

std::vector<std::string> hosts_of(const json& j) {
  std::vector<std::string> out;
  if (!j.contains("hosts") || !j["hosts"].is_array()) return out;
  for (const auto& h : j["hosts"]) out.push_back(h.is_string() ? h.get<std::string>() : "?");
  return out;
}

const json& array_at(const json& j, const char* key, const std::string& where) {
  static const json empty = json::array();
  if (!j.contains(key)) return empty;
  if (!j[key].is_array())
    throw InvalidArgument(fmt::format("{}: field '{}' is not a list", where, key));
  return j[key];
}

int rank_at(const json& j, const char* key, int world, const std::string& where) {
  const int64_t limit = world > 0 ? world : int64_t{1} << 24;
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0 ||
      j[key].get<int64_t>() >= limit)
    throw InvalidArgument(fmt::format("{}: field '{}' is not a rank", where, key));
  return static_cast<int>(j[key].get<int64_t>());
}

// Pairwise: isolation findings with fault codes. "a <-> b" names a link, else a host.
void pairwise(const json& j, const std::string& where, Evidence& e) {
  const std::vector<std::string> hosts = hosts_of(j);
  if (j.contains("bandwidth_gbps") && j["bandwidth_gbps"].is_array()) {
    const json& m = j["bandwidth_gbps"];
    for (size_t a = 0; a < m.size(); ++a) {
      if (!m[a].is_array()) continue;
      for (size_t b = 0; b < m[a].size(); ++b)
        if (a != b && m[a][b].is_number())
          e.facts.push_back({"link", static_cast<int>(a), "", a < hosts.size() ? hosts[a] : "",
                             fmt::format("rank {}", b), "", "bandwidth_gbps", m[a][b].get<double>(),
                             "", ""});
    }
  }
  if (!j.contains("isolation") || !j["isolation"].is_object()) return;
  for (const json& f : array_at(j["isolation"], "findings", where + " isolation")) {
    const std::string code = str(f, "code"), severity = str(f, "severity");
    Finding x;
    if (code == "HOST_SLOW" || code == "HOST_FLAPPING")
      x.type = FindingType::SlowHost;
    else if (code == "LINK_SLOW" || code == "LINK_FLAPPING")
      x.type = FindingType::SlowLink;
    else if (code == "HOST_DOWN" || code == "LINK_DOWN")
      x.type = FindingType::Unreachable;
    else
      continue;  // *_INCONCLUSIVE: neither confirmed nor cleared
    x.who = (code.starts_with("HOST") ? "host " : "link ") + str(f, "who");
    const std::string who = str(f, "who");
    const size_t arrow = who.find(" <-> ");
    x.hosts = arrow == std::string::npos
                  ? std::vector<std::string>{who}
                  : std::vector<std::string>{who.substr(0, arrow), who.substr(arrow + 5)};
    // CRIT: confirmed by re-measurement beyond the noise; WARN: decided, but smaller.
    x.confidence = severity == "CRIT" ? kStated : kMeasured;
    x.evidence.push_back(fmt::format(
        "{}: {} {} ({} rule{}): {}", where, code, severity, str(f, "rule"),
        str(f, "direction").empty() ? "" : ", " + str(f, "direction"), str(f, "reason")));
    x.evidence.push_back(
        fmt::format("{:.3g} GB/s, effect {:.0f} %, noise {:.3g} GB/s, {} "
                    "confirmations",
                    num(f, "value_gbps"), num(f, "effect") * 100, num(f, "noise_gbps"),
                    num(f, "confirmations")));
    x.next_step = str(f, "next_step");
    e.findings.push_back(std::move(x));
  }
}

void stragglers(const json& j, const std::string& where, Evidence& e) {
  const std::vector<std::string> hosts = hosts_of(j);
  const int world = j.contains("world_size") && j["world_size"].is_number_integer()
                        ? j["world_size"].get<int>()
                        : 0;
  for (const json& r : array_at(j, "ranks", where))
    e.facts.push_back({"rank", rank_at(r, "rank", world, where), "", str(r, "host"), "",
                       "all_reduce (stragglers probe)", "late_p50_us", num(r, "median_late_us"), "",
                       ""});
  for (const json& r : array_at(j, "stragglers", where)) {
    const int rank = rank_at(r, "rank", world, where);
    Finding x;
    x.type = FindingType::Straggler;
    x.who = fmt::format("rank {} ({})", rank, str(r, "host"));
    x.ranks = {rank};
    x.hosts = {str(r, "host")};
    x.confidence = kMeasured;
    x.evidence.push_back(fmt::format(
        "{}: arrives {:.1f} us after the earliest rank (median), {:.1f} us at p95, last in "
        "{:.0f} % of iterations",
        where, num(r, "median_late_us"), num(r, "p95_late_us"), num(r, "last_fraction") * 100));
    x.next_step =
        "see what else runs on that host and core (top; taskset -p PID); a busy or throttled CPU "
        "delays the rank before every collective";
    e.findings.push_back(std::move(x));
  }
}

void connectivity(const json& j, const std::string& where, Evidence& e) {
  const std::vector<std::string> hosts = hosts_of(j);
  const int world = static_cast<int>(hosts.size());
  for (const json& h : array_at(j, "isolated_hosts", where)) {
    Finding x;
    x.type = FindingType::Unreachable;
    x.who = "host " + (h.is_string() ? h.get<std::string>() : h.dump());
    x.hosts = {h.is_string() ? h.get<std::string>() : h.dump()};
    x.confidence = kStated;
    x.evidence.push_back(where + ": reaches no other host (every cross-host pair broken)");
    x.next_step = "check that host's network (link state, addresses, firewall) before the links";
    e.findings.push_back(std::move(x));
  }
  for (const json& p : array_at(j, "broken_pairs", where)) {
    const int a = rank_at(p, "a", world, where), b = rank_at(p, "b", world, where);
    Finding x;
    x.type = FindingType::Unreachable;
    x.who =
        fmt::format("link rank {} ({}) <-> rank {} ({})", a, str(p, "host_a"), b, str(p, "host_b"));
    x.ranks = {a, b};
    x.hosts = {str(p, "host_a"), str(p, "host_b")};
    x.confidence = kStated;
    x.evidence.push_back(fmt::format("{}: {}", where, str(p, "error").substr(0, 160)));
    x.next_step = "test that pair again (collie probe connectivity), then the route between them";
    e.findings.push_back(std::move(x));
  }
  for (const json& m : array_at(j, "missing_ranks", where)) {
    if (!m.is_number_integer()) throw InvalidArgument(where + ": missing_ranks holds a non-rank");
    const int rank = m.get<int>();
    Finding x;
    x.type = FindingType::Unreachable;
    x.who = rank_label(rank, hosts);
    x.ranks = {rank};
    x.confidence = kMeasured;
    x.evidence.push_back(where + ": did not report its results through the store");
    x.next_step = "check that the rank's process still runs and reaches the store host";
    e.findings.push_back(std::move(x));
  }
}

}  // namespace

void read_probe(const json& j, Evidence& e) {
  const std::string probe = str(j, "probe");
  const size_t before = e.findings.size();
  const std::string where = "probe " + printable(probe.substr(0, 40));
  if (probe == "pairwise")
    pairwise(j, where, e);
  else if (probe == "stragglers")
    stragglers(j, where, e);
  else if (probe == "connectivity")
    connectivity(j, where, e);
  else if (probe != "env")
    throw InvalidArgument("collie probe JSON of an unknown probe '" +
                          printable(probe.substr(0, 40)) + "'");
  e.contributed = fmt::format("collie probe {}: {} ranks, {} findings", printable(probe),
                              hosts_of(j).size(), e.findings.size() - before);
}

void read_accept(const json& j, Evidence& e) {
  const std::vector<std::string> hosts = hosts_of(j);
  const json& checks = array_at(j, "checks", "collie accept report");
  int failed = 0;
  for (size_t i = 0; i < checks.size(); ++i) {
    const json& c = checks[i];
    const std::string name = printable(str(c, "name").substr(0, 60));
    const std::string where = fmt::format("accept check '{}'", name);
    failed += c.contains("passed") && c["passed"].is_boolean() && !c["passed"].get<bool>();
    if (c.contains("details") && c["details"].is_object() && c["details"].contains("probe")) {
      const std::string probe = str(c["details"], "probe");
      if (probe == "pairwise")
        pairwise(c["details"], where, e);
      else if (probe == "stragglers")
        stragglers(c["details"], where, e);
      else if (probe == "connectivity")
        connectivity(c["details"], where, e);
    }
    if (str(c, "kind") == "perf" && c.contains("rows")) {
      reports::RunResult run;
      run.meta.hosts = hosts;
      run.meta.world_size = static_cast<int>(hosts.size());
      for (const json& row : array_at(c, "rows", where))
        run.rows.push_back(reports::row_from_json(row));
      Evidence sub;
      read_run(run, sub);
      for (auto& f : sub.findings) {
        f.evidence.insert(f.evidence.begin(), where + " (perf sweep)");
        e.findings.push_back(std::move(f));
      }
      for (auto& f : sub.facts) e.facts.push_back(std::move(f));
    }
  }
  e.contributed =
      fmt::format("collie accept '{}': verdict {}, {} checks ({} failed), {} ranks",
                  printable(str(j, "name").substr(0, 60)),
                  printable(str(j, "verdict").substr(0, 20)), checks.size(), failed, hosts.size());
}

}  // namespace collie::evidence::detail
