// Verdicts from every kind of evidence in one Diagnosis (src/diagnose/evidence_verdicts.h): the
// evidence readers' findings become verdicts, joined with the dumps' by host; verdicts that do
// not share a host, or come from the same input, stay apart.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "debug/analyzer.h"
#include "diagnose/dump_verdicts.h"
#include "diagnose/evidence_verdicts.h"
#include "evidence/evidence.h"
#include "support/synthetic_job.h"

namespace collie {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream f(std::string(COLLIE_SOURCE_DIR) + "/tests/evidence/fixtures/" + name);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

Verdict verdict(VerdictKind k, const std::string& hosts, const std::string& source, double c) {
  Verdict v;
  v.kind = k;
  v.hosts = hosts;
  v.source = source;
  v.confidence = c;
  v.summary = std::string(verdict_name(k)) + " on " + hosts;
  v.evidence = {"seen in " + source};
  return v;
}

// The verdicts after join_by_host.
Diagnosis joined(std::vector<Verdict> verdicts) {
  Diagnosis d;
  d.verdicts = std::move(verdicts);
  join_by_host(d);
  return d;
}

bool has_line(const Verdict& v, const std::string& part) {
  for (const std::string& e : v.evidence)
    if (e.find(part) != std::string::npos) return true;
  return false;
}

TEST(EvidenceJoin, TheSameKindOnACommonHostFromTwoInputsIsOneVerdict) {
  const Diagnosis d = joined({verdict(VerdictKind::Straggler, "node[1-2]", "perf.json", 0.7),
                              verdict(VerdictKind::Straggler, "node2", "probe.json", 0.5)});
  ASSERT_EQ(d.verdicts.size(), 1u);
  const Verdict& v = d.verdicts[0];
  EXPECT_NEAR(v.confidence, 1 - 0.3 * 0.5, 1e-9);
  EXPECT_EQ(v.hosts, "node[1-2]");
  EXPECT_EQ(v.source, "perf.json + probe.json");
  EXPECT_TRUE(has_line(v, "seen in perf.json"));
  EXPECT_TRUE(has_line(v, "seen in probe.json"));
  EXPECT_TRUE(has_line(v, "also in probe.json"));
}

TEST(EvidenceJoin, OtherHostsTheSameInputOrACutHostListStayApart) {
  Diagnosis d;
  d.verdicts.push_back(verdict(VerdictKind::Straggler, "node1", "perf.json", 0.7));
  d.verdicts.push_back(verdict(VerdictKind::Straggler, "node3", "probe.json", 0.5));  // other host
  d.verdicts.push_back(verdict(VerdictKind::Straggler, "node1", "perf.json", 0.5));   // same input
  d.verdicts.push_back(
      verdict(VerdictKind::Straggler, "node1,... (3 more hosts)", "x.json", 0.5));   // cut short
  d.verdicts.push_back(verdict(VerdictKind::SlowHost, "node3", "probe.json", 0.9));  // same input
  join_by_host(d);
  ASSERT_EQ(d.verdicts.size(), 5u);
  for (const Verdict& v : d.verdicts) {
    EXPECT_EQ(v.evidence.size(), 1u) << v.summary << ": " << v.evidence.back();
  }
}

TEST(EvidenceJoin, OtherKindsOnACommonHostNameEachOther) {
  const Diagnosis d =
      joined({verdict(VerdictKind::NotJoined, "node[1-4]", "flight-recorder dumps", 0.9),
              verdict(VerdictKind::SlowLink, "node[3,9]", "accept.json", 0.7)});
  ASSERT_EQ(d.verdicts.size(), 2u);
  EXPECT_TRUE(has_line(d.verdicts[0], "also SLOW_LINK of node3 in accept.json"));
  EXPECT_TRUE(has_line(d.verdicts[1], "also NOT_JOINED of node3 in flight-recorder dumps"));
  EXPECT_DOUBLE_EQ(d.verdicts[0].confidence, 0.9);  // corroboration is shown, not scored
}

// The readers' real output: an acceptance report and an nccl-tests run that share node2.
TEST(EvidenceJoin, FindingsOfRealInputsBecomeVerdictsWithTheirSources) {
  const auto accept = evidence::read_evidence_text("accept.json", fixture("accept_report.json"));
  const auto tests = evidence::read_evidence_text("nt.json", fixture("nccl_tests_per_iter.json"));
  Diagnosis d;
  add_evidence(d, {accept, tests});
  ASSERT_EQ(d.sources.size(), 2u);
  EXPECT_EQ(d.sources[0].rfind("accept.json: collie-accept: ", 0), 0u) << d.sources[0];
  size_t findings = accept.findings.size() + tests.findings.size();
  EXPECT_EQ(d.verdicts.size(), findings);  // no two of the same kind share a host
  int stragglers_on_node2 = 0;
  for (const Verdict& v : d.verdicts) {
    if (v.kind == VerdictKind::Straggler && v.hosts == "node2") {
      ++stragglers_on_node2;
      EXPECT_TRUE(has_line(v, "also SLOW_LINK of node2 in accept.json")) << v.summary;
    }
    if (v.hosts == "node3") {
      EXPECT_FALSE(has_line(v, "also ")) << v.summary;
    }
  }
  EXPECT_EQ(stragglers_on_node2, 1);
  for (size_t i = 1; i < d.verdicts.size(); ++i)  // causes first
    EXPECT_LE(static_cast<int>(d.verdicts[i - 1].kind), static_cast<int>(d.verdicts[i].kind));
}

// Dumps of a job whose rank 5 froze (host node0002) and an acceptance report that found that
// host's link slow: the dumps' verdict names the report's, and the other way round.
TEST(EvidenceJoin, ADumpVerdictAndAnAcceptanceFindingOnItsHostNameEachOther) {
  testing::SyntheticJobOptions o;
  o.ranks = 16;
  o.per_host = 4;
  o.entries = 64;
  o.hang = testing::Hang::FrozenRank;
  o.culprit = 5;
  const testing::SyntheticJob job(o);
  ASSERT_EQ(job.host(5), "node0002");
  std::vector<RankDump> dumps;
  for (int r = 0; r < o.ranks; ++r) dumps.push_back(parse_dump(job.dump(r, false)));
  Diagnosis d = diagnose(analyze(dumps), "flight-recorder dumps");
  ASSERT_FALSE(d.verdicts.empty());
  const VerdictKind culprit_kind = d.verdicts[0].kind;
  const std::string report = replace_all(fixture("accept_report.json"), "node2", "node0002");
  add_evidence(d, {evidence::read_evidence_text("accept.json", report)});
  bool dump_side = false, accept_side = false;
  for (const Verdict& v : d.verdicts) {
    if (v.source == "flight-recorder dumps" && v.kind == culprit_kind &&
        v.ranks == std::vector<int>{5}) {
      dump_side = has_line(v, "also SLOW_LINK of node0002 in accept.json");
    }
    if (v.kind == VerdictKind::SlowLink) {
      accept_side = has_line(v, std::string("also ") + verdict_name(culprit_kind) +
                                    " of node0002 in flight-recorder dumps");
    }
  }
  EXPECT_TRUE(dump_side) << to_text(d);
  EXPECT_TRUE(accept_side) << to_text(d);
}

}  // namespace
}  // namespace collie
