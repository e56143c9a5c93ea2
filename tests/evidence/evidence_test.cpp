// The evidence readers (src/evidence) on fixtures in each input's own format (fixtures/README.md
// says where each format comes from): the findings each input supports, healthy inputs that name
// nobody, and unusable inputs refused in one line.
#include "evidence/evidence.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "evidence/nccl_tests_text.h"
#include "reports/nccl_tests_json.h"

namespace collie::evidence {
namespace {

std::string fixture(const std::string& name) {
  return std::string(COLLIE_EVIDENCE_FIXTURES) + "/" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<const Finding*> of_type(const Evidence& e, FindingType t) {
  std::vector<const Finding*> out;
  for (const auto& f : e.findings)
    if (f.type == t) out.push_back(&f);
  return out;
}

// The one-line error an unusable input gets, or "" when it was read.
std::string refusal(const std::string& text) {
  try {
    read_evidence_text("in.json", text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(RasStatus, DeadUnreachableAndLagging) {
  const Evidence e = read_evidence(fixture("ras_status_dead.json"));
  EXPECT_EQ(e.format, "ncclras-json");
  const auto dead = of_type(e, FindingType::RankDead);
  ASSERT_EQ(dead.size(), 1u) << evidence_text({e});
  EXPECT_EQ(dead[0]->who, "process 41877 on 10.0.0.12");
  EXPECT_EQ(dead[0]->hosts, std::vector<std::string>{"10.0.0.12"});
  EXPECT_DOUBLE_EQ(dead[0]->confidence, kStated);
  const auto unreachable = of_type(e, FindingType::Unreachable);
  ASSERT_EQ(unreachable.size(), 1u);
  EXPECT_EQ(unreachable[0]->who, "process 52011 on 10.0.0.13");
  // Rank 3 launched two AllReduce fewer than ranks 0 and 1: the lagging set, named.
  const auto behind = of_type(e, FindingType::NotJoined);
  ASSERT_EQ(behind.size(), 1u);
  EXPECT_EQ(behind[0]->ranks, std::vector<int>{3});
  EXPECT_DOUBLE_EQ(behind[0]->confidence, kMeasured);  // two behind: not one in flight
  const std::string text = evidence_text({e});
  EXPECT_NE(text.find("AllReduce: launched 1521 where the others launched 1523"), std::string::npos)
      << text;
  EXPECT_NE(e.contributed.find("2 communicators, 4 ranks reached, 2 processes missing (1 dead), "
                               "1 rank with an error"),
            std::string::npos)
      << e.contributed;
  // Facts: every rank's status (rank 3 with its async error) and launch counts.
  bool async = false;
  for (const auto& f : e.facts) async |= f.rank == 3 && f.text == "async error: remote error";
  EXPECT_TRUE(async);
}

TEST(RasStatus, HealthyJobNamesNobody) {
  const Evidence e = read_evidence(fixture("ras_status_healthy.json"));
  EXPECT_TRUE(e.findings.empty()) << evidence_text({e});
  EXPECT_FALSE(e.facts.empty());
}

TEST(RasStatus, OneLaunchBehindIsIndirect) {
  std::string text = slurp(fixture("ras_status_healthy.json"));
  const size_t at = text.rfind("\"AllReduce\": 1523");
  text.replace(at, 17, "\"AllReduce\": 1522");  // the last rank: one launch behind
  const Evidence e = read_evidence_text("one_behind.json", text);
  const auto behind = of_type(e, FindingType::NotJoined);
  ASSERT_EQ(behind.size(), 1u);
  EXPECT_EQ(behind[0]->ranks, std::vector<int>{3});
  EXPECT_DOUBLE_EQ(behind[0]->confidence, kIndirect);
}

TEST(RasEvents, LastStateOfEachProcess) {
  const Evidence e = read_evidence(fixture("ras_events.json"));
  EXPECT_EQ(e.format, "ncclras-events");
  const auto dead = of_type(e, FindingType::RankDead);
  ASSERT_EQ(dead.size(), 1u) << evidence_text({e});
  EXPECT_EQ(dead[0]->who, "process 41877 on 10.0.0.12");
  const auto unreachable = of_type(e, FindingType::Unreachable);
  ASSERT_EQ(unreachable.size(), 2u) << evidence_text({e});
  EXPECT_EQ(unreachable[0]->who, "a process on 10.0.0.12<41525>");  // an address-only event
  EXPECT_EQ(unreachable[1]->who, "process 52011 on 10.0.0.13");
  EXPECT_EQ(e.facts.size(), 5u);
}

TEST(NcclTestsJson, PerProcessTimesAndWrongData) {
  const Evidence e = read_evidence(fixture("nccl_tests_per_iter.json"));
  EXPECT_EQ(e.format, "nccl-tests-json");
  const auto slow = of_type(e, FindingType::Straggler);
  ASSERT_EQ(slow.size(), 1u) << evidence_text({e});
  EXPECT_EQ(slow[0]->who, "rank 3 (node2)");
  EXPECT_DOUBLE_EQ(slow[0]->confidence, kIndirect);  // per-process times, not arrivals
  const auto wrong = of_type(e, FindingType::WrongData);
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_TRUE(wrong[0]->ranks.empty());  // nccl-tests sums #wrong over ranks
  EXPECT_NE(wrong[0]->evidence[0].find("all_reduce 1048576 B out float sum: 12 wrong elements"),
            std::string::npos)
      << wrong[0]->evidence[0];
  EXPECT_NE(e.contributed.find("4 ranks on 2 hosts"), std::string::npos) << e.contributed;
}

TEST(NcclTestsText, TableWithAndWithoutPerIterationColumns) {
  for (const char* name : {"nccl_tests.txt", "nccl_tests_per_iter.txt"}) {
    const Evidence e = read_evidence(fixture(name));
    EXPECT_EQ(e.format, "nccl-tests-text");
    EXPECT_NE(e.contributed.find("6 rows of all_reduce; 4 ranks on 2 hosts"), std::string::npos)
        << name << ": " << e.contributed;
    const auto wrong = of_type(e, FindingType::WrongData);
    ASSERT_EQ(wrong.size(), 1u) << name;
    EXPECT_EQ(of_type(e, FindingType::Straggler).size(), 0u);  // the text has no per-rank times
    const reports::RunResult r = parse_nccl_tests_text(slurp(fixture(name)));
    ASSERT_EQ(r.rows.size(), 6u);
    EXPECT_EQ(r.rows[5].placement, "in");
    EXPECT_DOUBLE_EQ(r.rows[5].busbw_gbps, 16.59);
    EXPECT_EQ(r.rows[4].wrong, 12);
    EXPECT_EQ(r.meta.hosts, (std::vector<std::string>{"node1", "node1", "node2", "node2"}));
  }
}

TEST(NcclTestsText, PlacementNotRunAndUncheckedWrong) {
  const std::string text =
      "# Collective test starting: alltoall_perf\n"
      "        1024           256     float    none      -1    12.00    0.09    0.06       0    "
      "11.00    0.09    0.07     N/A\n"
      "        2048           512     float    none      -1      N/A     N/A     N/A     N/A    "
      "13.00    0.16    0.12     N/A\n";
  const reports::RunResult r = parse_nccl_tests_text(text);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].collective, "alltoall");
  EXPECT_EQ(r.rows[1].wrong, -1);
  EXPECT_EQ(r.rows[2].placement, "in");
}

// collie perf -J with -I's arrival statistics: rank 1 kept the others waiting (it waited least
// in the calls, 3 ms after the first rank), named; the same run without the late rank is not.
std::string perf_document(bool late) {
  reports::RunResult r;
  r.meta.backend = "gloo";
  r.meta.world_size = 3;
  r.meta.hosts = {"a", "b", "c"};
  r.meta.started_at = "2026-03-02T13:55:00Z";
  for (int64_t size : {1024, 4096, 16384}) {
    reports::ResultRow row;
    row.collective = "all_reduce";
    row.placement = "out";
    row.size_bytes = size;
    row.count = size / 4;
    row.dtype = "float";
    row.redop = "sum";
    row.wrong = 0;
    row.iters = 20;
    row.rank_wait_us.resize(3);
    for (int i = 0; i < 20; ++i)
      for (int k = 0; k < 3; ++k)
        row.rank_wait_us[k].push_back(k == 1 && late ? 40.0 + i % 3 : 3040.0 + (i * 7 + k) % 11);
    row.arrival = reports::analyze_arrivals(row.rank_wait_us);
    r.rows.push_back(row);
  }
  r.summary = reports::summarize(r.rows, 3);
  return reports::to_results_document(r, reports::NcclTestsConfig{}).dump();
}

TEST(ColliePerf, ArrivalStragglerNamedBothWays) {
  const Evidence e = read_evidence_text("perf.json", perf_document(true));
  EXPECT_EQ(e.format, "collie-perf");
  const auto slow = of_type(e, FindingType::Straggler);
  ASSERT_EQ(slow.size(), 1u) << evidence_text({e});
  EXPECT_EQ(slow[0]->who, "rank 1 (b)");
  EXPECT_DOUBLE_EQ(slow[0]->confidence, kMeasured);
  EXPECT_NE(slow[0]->evidence[0].find("in 3 of 3 rows"), std::string::npos) << slow[0]->evidence[0];
  const Evidence healthy = read_evidence_text("perf.json", perf_document(false));
  EXPECT_TRUE(healthy.findings.empty()) << evidence_text({healthy});
  EXPECT_NE(healthy.contributed.find("arrival statistics in 3 rows"), std::string::npos);
}

TEST(CollieAccept, PairwiseStragglersAndPerfChecks) {
  const Evidence e = read_evidence(fixture("accept_report.json"));
  EXPECT_EQ(e.format, "collie-accept");
  const auto host = of_type(e, FindingType::SlowHost);
  ASSERT_EQ(host.size(), 1u) << evidence_text({e});
  EXPECT_EQ(host[0]->who, "host node3");
  EXPECT_DOUBLE_EQ(host[0]->confidence, kStated);
  const auto link = of_type(e, FindingType::SlowLink);
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(link[0]->hosts, (std::vector<std::string>{"node1", "node2"}));
  EXPECT_DOUBLE_EQ(link[0]->confidence, kMeasured);  // WARN
  const auto late = of_type(e, FindingType::Straggler);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0]->ranks, std::vector<int>{5});
  const auto wrong = of_type(e, FindingType::WrongData);
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_EQ(wrong[0]->who, "rank 2 (node2)");
  EXPECT_NE(wrong[0]->evidence[1].find("the first at element 4099"), std::string::npos);
  // The inconclusive pairwise finding decides nothing.
  EXPECT_EQ(e.findings.size(), 4u);
}

TEST(CollieProbe, ConnectivityBrokenPairsAndIsolatedHost) {
  const Evidence e = read_evidence(fixture("probe_connectivity.json"));
  EXPECT_EQ(e.format, "collie-probe");
  const auto u = of_type(e, FindingType::Unreachable);
  ASSERT_EQ(u.size(), 4u) << evidence_text({e});
  EXPECT_EQ(u[0]->who, "host node4");
}

TEST(Evidence, TextAndJsonListEveryInputAndFinding) {
  const std::vector<Evidence> all = {read_evidence(fixture("ras_status_dead.json")),
                                     read_evidence(fixture("ras_status_healthy.json"))};
  const std::string text = evidence_text(all);
  EXPECT_EQ(text.find("# evidence: 2 inputs, 3 findings\n"), 0u) << text;
  EXPECT_NE(text.find("RANK_DEAD process 41877 on 10.0.0.12 [confidence 0.9] from"),
            std::string::npos);
  const nlohmann::json j = evidence_json(all);
  EXPECT_EQ(j["schema"], "collie.evidence.v1");
  ASSERT_EQ(j["findings"].size(), 3u);
  EXPECT_EQ(j["findings"][0]["type"], "RANK_DEAD");  // most confident first
  EXPECT_EQ(j["inputs"][1]["format"], "ncclras-json");
}

TEST(Evidence, UnusableInputIsOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"{\"communicators\": [", "truncated"},
      {"{\"a\": 1} garbage", "text between JSON values"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key"},
      {"{\"communicators\": [{\"hash\": 5}]}", "'hash' in communicators[0] is not a string"},
      {"{\"communicators\": [{\"hash\": \"0x1\", \"size\": 2, \"ranks\": [{\"rank\": 1}]}]}",
       "missing field 'host'"},
      {"{\"entries\": [], \"pg_config\": {}}", "collie analyze"},
      {"{\"hello\": \"world\"}", "no format collie reads"},
      {"{\"schema\": \"collie.perf.v9\"}", "none this collie reads"},
      {"{\"probe\": \"teleport\"}", "unknown probe"},
      {"Job summary\n===========\nCommunicators... (0.00s)\n", "ncclras -f json"},
      {"# nThread 1 nGpus 1\n    1024   256  float  sum  -1  1.0  x\n", "no row could be read"},
      {std::string(500, 'z') + "\n", "it starts 'zzzz"},
  };
  for (const auto& [text, expect] : cases) {
    const std::string why = refusal(text);
    EXPECT_NE(why.find(expect), std::string::npos) << "input: " << text.substr(0, 60) << "\n"
                                                   << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_LT(why.size(), 400u) << why;  // at most ~80 characters of the input are quoted
    EXPECT_EQ(why.rfind("in.json: ", 0), 0u) << why;
  }
}

TEST(Evidence, OnlyRegularFilesWithinTheSizeLimit) {
  const std::string dir = ::testing::TempDir() + "evidence_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(read_evidence(fifo), InvalidArgument);  // refused at once, never blocks
  EXPECT_THROW(read_evidence(dir), InvalidArgument);
  EXPECT_THROW(read_evidence(dir + "/missing.json"), InvalidArgument);
  ReadLimits small;
  small.max_bytes = 100;
  try {
    read_evidence(fixture("ras_status_dead.json"), small);
    ADD_FAILURE() << "a file over the limit was read";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 100 read"), std::string::npos) << e.what();
  }
  ReadLimits few;
  few.max_facts = 3;
  const Evidence e = read_evidence(fixture("ras_status_dead.json"), few);
  EXPECT_EQ(e.facts.size(), 3u);
  EXPECT_NE(e.contributed.find("dropped"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace collie::evidence
