// Acceptance reports at 1,024 hosts without a network (issue 39). Pairwise: the quick survey
// and its re-measurements answered by the simulated cluster (sim_cluster.h) through the real
// PairwiseResult, its text, JSON and HTML heat map; connectivity: synthetic per-rank rows
// through connectivity_row and merge_connectivity. Each test checks that the bad host and the
// bad link are named before anything else, that the matrix is shown by host, and that what rank
// 0 keeps grows with N (cells and report sizes counted at two sizes), never with N^2.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "pairwise_fixture.h"
#include "probes/accept.h"
#include "probes/pairwise.h"
#include "reports/heat_map_html.h"
#include "sim_cluster.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

struct Scenario {
  int hosts = 0, ranks_per_host = 1;
  int bad_host = -1;
  std::pair<int, int> bad_link{-1, -1};  // units, a pair of the survey round
};

std::vector<std::string> host_names(const Scenario& s) {
  std::vector<std::string> names;
  for (int h = 0; h < s.hosts; ++h)
    for (int k = 0; k < s.ranks_per_host; ++k) names.push_back(fmt::format("node{:04d}", h));
  return names;
}

// A bad host a third of the way in (at 0.3 of the others' speed), a bad link (0.3) between two
// other hosts that the survey round (rotation 0) pairs.
Scenario scenario(int hosts, int ranks_per_host) {
  Scenario s;
  s.hosts = hosts;
  s.ranks_per_host = ranks_per_host;
  s.bad_host = hosts / 3;
  const auto round = survey_round(hosts, 0);
  for (size_t k = round.size() / 2; k < round.size(); ++k)
    if (round[k].a != s.bad_host && round[k].b != s.bad_host) {
      s.bad_link = {round[k].a, round[k].b};
      break;
    }
  return s;
}

// The quick schedule as rank 0 runs it (probes/pairwise.cpp's Planner): each measured pair of
// units fills the rank matrix at its measuring ranks.
PairwiseResult quick_pairwise(const Scenario& s) {
  PairwiseOptions o;
  o.rotation = 0;
  const std::vector<std::string> hosts = host_names(s);
  PairwiseResult r = merge_pairwise(static_cast<int>(hosts.size()), hosts, {}, o);
  sim::SimCluster c;
  c.hosts = s.hosts;
  c.rng.seed(7);
  c.slow_hosts[s.bad_host] = 0.3;
  c.slow_links[s.bad_link] = 0.3;
  auto measure = [&](const std::vector<UnitPair>& pairs) {
    std::vector<LinkSample> out = c.measure(pairs);
    for (const auto& m : out) {
      const int i = r.unit_rank.at(m.a), j = r.unit_rank.at(m.b);
      if (!m.ab.empty() && std::isnan(r.bw_gbps.at(i, j))) r.bw_gbps.set(i, j, median(m.ab));
      if (!m.ba.empty() && std::isnan(r.bw_gbps.at(j, i))) r.bw_gbps.set(j, i, median(m.ba));
      if (m.lat_us >= 0 && std::isnan(r.latency_us.at(i, j))) {
        r.latency_us.set(i, j, m.lat_us);
        r.latency_us.set(j, i, m.lat_us);
      }
    }
    return out;
  };
  isolate_result(r, o, measure, 0);
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The first line containing `what`; -1 when none.
int line_of(const std::vector<std::string>& lines, const std::string& what) {
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(what) != std::string::npos) return static_cast<int>(i);
  return -1;
}

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(AcceptScale, PairwiseOn1024HostsNamesTheBadHostAndLinkFirst) {
  for (const int rph : {1, 2}) {
    SCOPED_TRACE(fmt::format("{} rank(s) per host", rph));
    const Scenario s = scenario(1024, rph);
    ASSERT_GE(s.bad_link.first, 0);
    const PairwiseResult r = quick_pairwise(s);
    const std::string host = fmt::format("node{:04d}", s.bad_host);
    const std::string la = fmt::format("node{:04d}", s.bad_link.first);
    const std::string lb = fmt::format("node{:04d}", s.bad_link.second);
    ASSERT_EQ(r.slow_hosts().size(), 1u) << r.to_text();
    ASSERT_EQ(r.slow_links().size(), 1u) << r.to_text();

    // Text: the host, then the link, before the matrices; the matrix by host starts with it.
    const auto lines = lines_of(r.to_text());
    const int host_line = line_of(lines, "SLOW HOST: " + host + " (rank");
    const int link_line = line_of(lines, "SLOW LINK: " + la);
    const int matrix_line = line_of(lines, "# bandwidth (GB/s, by host");
    ASSERT_GE(host_line, 0) << r.to_text();
    ASSERT_GE(link_line, 0) << r.to_text();
    EXPECT_NE(lines[link_line].find(lb), std::string::npos) << lines[link_line];
    EXPECT_LT(host_line, link_line);
    ASSERT_GT(matrix_line, link_line);
    EXPECT_EQ(line_of(lines, "SLOW "), host_line);  // nothing named before the host
    ASSERT_LT(matrix_line + 2, static_cast<int>(lines.size()));
    EXPECT_NE(lines[matrix_line + 1].find("1024 rows: the 16 worst"), std::string::npos)
        << lines[matrix_line + 1];
    EXPECT_NE(lines[matrix_line + 2].find(host), std::string::npos) << lines[matrix_line + 2];
    EXPECT_NE(lines.back().find("1 host(s) and 1 link(s) named"), std::string::npos)
        << lines.back();

    // Accept: the host is the first finding, the link the second, nothing else.
    const CheckSpec check = parse_spec(json::parse(R"({"baseline": "b.json", "checks": [
        {"probe": "pairwise", "rules": {"max_slow_hosts": 0, "max_slow_links": 0}}]})"))
                                .checks.at(0);
    const CheckOutcome o = evaluate_pairwise(check, r, {});
    EXPECT_FALSE(o.passed);
    ASSERT_EQ(o.findings.size(), 2u);
    EXPECT_EQ(o.findings[0].kind, "host");
    EXPECT_EQ(o.findings[0].who.rfind(host + " (rank", 0), 0u) << o.findings[0].who;
    EXPECT_EQ(o.findings[1].kind, "link");
    EXPECT_NE(o.findings[1].who.find(la), std::string::npos) << o.findings[1].who;
    EXPECT_NE(o.findings[1].who.find(lb), std::string::npos) << o.findings[1].who;

    // JSON: the matrix by host (every cell between two hosts), no dense rank matrix.
    const json j = r.to_json();
    EXPECT_FALSE(j.contains("bandwidth_gbps"));
    const json& hm = j.at("host_matrix");
    ASSERT_EQ(hm.at("units").size(), 1024u);
    EXPECT_EQ(hm["units"][s.bad_host].get<std::string>().rfind(host, 0), 0u);
    int bad_cells = 0;
    for (const auto& cell : hm.at("bandwidth_gbps")) {
      const int u = cell[0].get<int>(), v = cell[1].get<int>();
      ASSERT_TRUE(u >= 0 && u < 1024 && v >= 0 && v < 1024 && u != v) << cell.dump();
      if (u == s.bad_host || v == s.bad_host) {
        ++bad_cells;
        EXPECT_LT(cell[2].get<double>(), 5) << cell.dump();  // 0.3 x 10 GB/s, with noise
      }
    }
    EXPECT_GE(bad_cells, 2);

    // HTML: the worst hosts first, the bad host in the first row; a bounded page.
    const std::string html =
        reports::heat_map_html(hm, "bandwidth_gbps", "bandwidth by host", "GB/s", true);
    const size_t first_row = html.find("<tr><td");
    ASSERT_NE(first_row, std::string::npos) << html.substr(0, 400);
    EXPECT_EQ(html.find(host), html.find(host, first_row)) << html.substr(0, 600);
    EXPECT_LT(html.find(host), html.find("</tr>", first_row));
    EXPECT_EQ(count_of(html, "<tr>"), 1u + reports::kHtmlHeatMapWorst);
  }
}

TEST(AcceptScale, HostMatrixIsTheMedianOverEachHostPairsRanks) {
  // 3 hosts x 2 ranks: every rank pair measured; cells between hosts a and b are 1, 2, 3, 10
  // (median 2.5), all others 5; same-host cells (50) stay out of the matrix by host.
  const std::vector<std::string> hosts{"a", "a", "b", "b", "c", "c"};
  PairwiseResult r = merge_pairwise(6, hosts, {}, PairwiseOptions{});
  const double ab[] = {1, 2, 3, 10};
  int k = 0;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      if (i == j) continue;
      r.latency_us.set(i, j, 5);
      if (hosts[i] == hosts[j])
        r.bw_gbps.set(i, j, 50);
      else if (hosts[i] == "a" && hosts[j] == "b")
        r.bw_gbps.set(i, j, ab[k++]);
      else
        r.bw_gbps.set(i, j, 5);
    }
  isolate_result(r, PairwiseOptions{}, fixture::from_matrix(r), 5);
  ASSERT_EQ(r.units, (std::vector<std::string>{"a", "b", "c"}));
  const RankMatrix m = r.unit_matrix(r.bw_gbps);
  ASSERT_EQ(m.size(), 3);
  EXPECT_EQ(m.cells(), 6u);
  EXPECT_DOUBLE_EQ(m.at(0, 1), 2.5);
  EXPECT_DOUBLE_EQ(m.at(1, 0), 5);
  EXPECT_TRUE(std::isnan(m.at(0, 0)));
  const json hm = r.to_json().at("host_matrix");
  EXPECT_EQ(hm.at("units")[0], "a (ranks 0, 1)");
  EXPECT_EQ(hm.at("bandwidth_gbps").size(), 6u);
  EXPECT_EQ(hm["bandwidth_gbps"][0], json::array({0, 1, 2.5}));
  // Up to 64 hosts the HTML draws every cell: 3 x 3 (the diagonal empty).
  const std::string html =
      reports::heat_map_html(hm, "bandwidth_gbps", "bandwidth by host", "GB/s", true);
  EXPECT_EQ(count_of(html, "<td"), 9u) << html;
  EXPECT_EQ(count_of(html, "<td></td>"), 3u) << html;
  EXPECT_NE(html.find("a (ranks 0, 1) -> b (ranks 2, 3): 2.500 GB/s"), std::string::npos) << html;
}

TEST(AcceptScale, PairwiseMemoryAndReportGrowLinearly) {
  // Counted, not timed: rank 0's matrices hold O(N) cells after a quick survey, the text report
  // and the HTML heat map do not grow with N, the JSON grows linearly.
  struct Size {
    size_t cells, pairs, text_lines, html_bytes, json_bytes;
  };
  auto size_at = [](int n) {
    const PairwiseResult r = quick_pairwise(scenario(n, 2));
    const json hm = r.to_json().at("host_matrix");
    return Size{r.bw_gbps.cells() + r.latency_us.cells(),
                static_cast<size_t>(r.isolation.pairs_measured), lines_of(r.to_text()).size(),
                reports::heat_map_html(hm, "bandwidth_gbps", "b", "GB/s", true).size(),
                r.to_json().dump().size()};
  };
  const Size small = size_at(256), large = size_at(1024);
  for (const auto& [n, sz] : {std::pair{256, small}, std::pair{1024, large}}) {
    SCOPED_TRACE(n);
    // One bandwidth cell per direction and one latency cell per direction for each unit pair
    // measured; a dense matrix would be 4 * (2n)^2.
    EXPECT_LE(sz.cells, 4 * sz.pairs);
    EXPECT_LE(sz.pairs, static_cast<size_t>(n));  // the survey (n / 2) plus re-measurements
  }
  EXPECT_LE(large.cells, 5 * small.cells);
  EXPECT_LE(large.text_lines, small.text_lines + 2);
  EXPECT_LE(large.html_bytes, small.html_bytes + 2000);
  EXPECT_LE(large.json_bytes, 5 * small.json_bytes);
}

TEST(AcceptScale, ConnectivityOn1024HostsNamesTheDeadHostAndTheBrokenLinkFirst) {
  // 1,024 hosts, one rank each; host 300 is dead (no report, every pair with it broken) and the
  // pair 700 <-> 900 is broken; every rank reports a row of O(1 + failures).
  const int n = 1024, dead = 300, la = 700, lb = 900;
  std::vector<std::string> hosts;
  for (int h = 0; h < n; ++h) hosts.push_back(fmt::format("node{:04d}", h));
  std::vector<std::optional<std::string>> rows(n);
  size_t row_bytes = 0;
  for (int r = 0; r < n; ++r) {
    if (r == dead) continue;
    std::vector<PeerResult> peers;
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      const bool ok = p != dead && !(std::min(r, p) == la && std::max(r, p) == lb);
      peers.push_back({p, ok, ok ? 40.0 + (r + p) % 7 : -1.0, ok ? "" : "recv timed out"});
    }
    rows[r] = connectivity_row(peers, 0);
    row_bytes = std::max(row_bytes, rows[r]->size());
  }
  // A healthy rank's row is a summary: no per-peer entry for the peers that answered.
  EXPECT_LT(row_bytes, 2000u);
  const ConnectivityResult c = merge_connectivity(n, hosts, rows);
  EXPECT_EQ(c.broken().size(), static_cast<size_t>(n - 1 + 1));  // O(N + broken), counted
  EXPECT_EQ(c.missing_ranks, std::vector<int>{dead});
  const auto lines = lines_of(c.to_text());
  EXPECT_LT(lines.size(), 40u) << c.to_text();
  const int host_line = line_of(lines, "host node0300 (rank 300) reaches no other host");
  const int link_line = line_of(lines, "node0700 <-> node0900: 1 broken pair(s)");
  ASSERT_GE(host_line, 0) << c.to_text();
  ASSERT_GE(link_line, 0) << c.to_text();
  EXPECT_LT(host_line, link_line);
  EXPECT_EQ(line_of(lines, " broken pair(s)"), link_line);  // the first host pair listed
  const CheckSpec check = parse_spec(json::parse(R"({"baseline": "b.json", "checks": [
      {"probe": "connectivity", "rules": {"all_reachable": true}}]})"))
                              .checks.at(0);
  const CheckOutcome o = evaluate_connectivity(check, c);
  ASSERT_GE(o.findings.size(), 2u);
  EXPECT_EQ(o.findings[0].kind, "host");
  EXPECT_EQ(o.findings[0].who, "node0300 (rank 300)");
  EXPECT_EQ(o.findings[1].kind, "pair");
  EXPECT_EQ(o.findings[1].who, "700 (node0700) <-> 900 (node0900)");
}

}  // namespace
}  // namespace collie::probes
