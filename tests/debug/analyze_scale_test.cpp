// `collie analyze` on the dumps of a synthetic job (tests/support/synthetic_job.h) at 4, 64 and
// 4,096 ranks, in collie's JSON and in PyTorch's pickles: each hang is named the same at every
// size (the same culprit ranks, and hosts where the format records them; the same kinds of
// finding in the same groups) and the report does not grow with N (64 and 4,096 ranks, 8 per
// host, print as many lines). Small rings keep the 4,096-rank cases to seconds.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/cli_run.h"
#include "debug/analyzer.h"
#include "debug/rank_ranges.h"
#include "diagnose/dump_verdicts.h"
#include "discovery/hostlist.h"
#include "support/synthetic_job.h"

namespace collie {
namespace {

using nlohmann::json;
using testing::Hang;
using testing::SyntheticJob;

struct Report {
  int code = -1;
  json j;  // what `collie analyze --json` prints: the analysis and its verdicts
  size_t text_lines = 0;
  std::string text;
};

// The job's dumps written to a folder and analyzed as `collie analyze DIR` does (fold_dump_dir,
// in this process: one read of 4,096 dumps); at 64 ranks the binary's --json must say the same.
Report analyze_job(const SyntheticJob& job, bool torch) {
  namespace fs = std::filesystem;
  // Thousands of small files: on tmpfs where there is one.
  std::error_code ec;
  const fs::path tmp =
      fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  const fs::path dir = tmp / fmt::format("collie_scale_{}_{}_{}_{}", ::getpid(),
                                         testing::hang_name(job.options().hang),
                                         job.options().ranks, torch ? "torch" : "json");
  fs::remove_all(dir);
  job.write(dir.string(), torch, 2);
  DumpFold fold;
  std::vector<std::string> errors;
  fold_dump_dir(dir.string(), fold, errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  // Memory follows what is still open, not N x entries: the fold keeps at most the rings'
  // collectives of the groups a hung or missing rank is in (4 per rank here: 0, 1, tp, dp).
  // Keeping every collective, 4,096 ranks hold thousands (each host's tp group's own).
  EXPECT_LE(fold.collectives_held(), 4 * job.options().entries + 8);
  const Analysis a = fold.analyze(AnalyzeOptions{});
  const Diagnosis d = diagnose(a, "flight-recorder dumps");
  Report r;
  r.code = a.findings.empty() && d.verdicts.empty() ? 0 : 1;
  r.j = to_json_value(a);
  r.j.update(to_json_value(d));
  r.text = to_text(d) + to_text(a);
  r.text_lines = static_cast<size_t>(std::count(r.text.begin(), r.text.end(), '\n'));
  if (job.options().ranks == 64) {
    const testing::CliRun cli = testing::run_collie({"analyze", dir.string(), "--json"});
    EXPECT_EQ(cli.code, r.code) << cli.err;
    EXPECT_EQ(json::parse(cli.out, nullptr, false), r.j) << cli.out.substr(0, 2000);
  }
  fs::remove_all(dir);
  return r;
}

// The findings as (kind, group) with the per-host group's number dropped ("tp12" -> "tp"): what
// is the same whatever the size.
std::multiset<std::string> shape(const json& j) {
  std::multiset<std::string> out;
  for (const json& f : j["findings"]) {
    const std::string pg =
        std::regex_replace(f["pg_id"].get<std::string>(), std::regex("^tp\\d+"), "tp");
    out.insert(f["kind"].get<std::string>() + "@" + pg);
  }
  return out;
}

std::vector<int> ranks_of(const json& v) {
  return parse_rank_ranges(v.get<std::string>(), 1 << 20, 1 << 20);
}

// The verdicts as (kind, ranks): what each size must name alike.
std::map<std::string, std::string> verdicts(const json& j) {
  std::map<std::string, std::string> out;
  for (const json& v : j["verdicts"])
    out[v["kind"].get<std::string>()] += v["ranks"].get<std::string>();
  return out;
}

// What every size must show for the hang.
void expect_named(const SyntheticJob& job, bool torch, const Report& r) {
  SCOPED_TRACE(fmt::format("{} at {} ranks ({})", testing::hang_name(job.options().hang),
                           job.options().ranks, torch ? "pickles" : "JSON"));
  const std::vector<int> culprits = job.culprits();
  ASSERT_TRUE(r.j.is_object()) << r.text;
  EXPECT_EQ(r.j["culprits"], rank_ranges(culprits)) << r.text;
  std::vector<std::string> hosts;
  for (int c : culprits) hosts.push_back(job.host(c));
  // PyTorch's dumps record no host.
  EXPECT_EQ(r.j["culprit_hosts"],
            torch || job.options().hang == Hang::NeverJoined ? "" : compress_hostlist(hosts))
      << r.text;
  const std::multiset<std::string> kinds = shape(r.j);
  const int n = job.options().ranks;
  std::vector<int> even, odd;
  for (int x = 0; x < n; ++x) (x / job.per_host() % 2 == 0 ? even : odd).push_back(x);
  // The typed verdict, and nothing else: the waiting ranks are evidence, not verdicts.
  const std::map<std::string, std::string> want =
      job.options().hang == Hang::None ? std::map<std::string, std::string>{}
      : job.options().hang == Hang::NeverJoined
          ? std::map<std::string, std::string>{{"RANK_DEAD", rank_ranges(culprits)}}
      : job.options().hang == Hang::OppositeOrder
          ? std::map<std::string, std::string>{{"DEADLOCK", rank_ranges([&] {
                                                  std::vector<int> all = even;
                                                  all.insert(all.end(), odd.begin(), odd.end());
                                                  std::sort(all.begin(), all.end());
                                                  return all;
                                                }())}}
          : std::map<std::string, std::string>{{"NOT_JOINED", rank_ranges(culprits)}};
  EXPECT_EQ(verdicts(r.j), want) << r.text;
  if (job.options().hang != Hang::None) {
    EXPECT_NE(r.j["first_hung_group"], "") << r.text;
  }
  switch (job.options().hang) {
    case Hang::None:
      EXPECT_EQ(r.code, 0) << r.text;
      EXPECT_TRUE(r.j["findings"].empty()) << r.text;
      break;
    case Hang::FrozenRank:
    case Hang::FrozenHost:
      EXPECT_EQ(r.code, 1) << r.text;
      for (const json& f : r.j["findings"]) {
        if (f["kind"] != "NOT_ALL_JOINED" || f["culprits"] == "") continue;
        for (int c : ranks_of(f["culprits"]))
          EXPECT_TRUE(std::binary_search(culprits.begin(), culprits.end(), c)) << f["message"];
      }
      EXPECT_GT(kinds.count("NOT_ALL_JOINED@" + fmt::format("dp{}", culprits[0] % job.per_host())),
                0u)
          << r.text;
      break;
    case Hang::NeverJoined:
      EXPECT_EQ(r.code, 1) << r.text;
      EXPECT_EQ(kinds.count("MISSING_DUMP@"), 1u) << r.text;
      break;
    case Hang::OppositeOrder: {
      // Each half waits in one group for the other half, blocked in the other group: no rank
      // is blamed, and each group names the other half.
      EXPECT_EQ(r.code, 1) << r.text;
      std::map<std::string, std::string> named;
      for (const json& f : r.j["findings"]) {
        if (f["kind"] == "NOT_ALL_JOINED") named[f["pg_id"]] = f["ranks"];
      }
      // Even hosts entered aux_pg (group 1) first: the world group misses them, and aux_pg
      // the odd hosts, which entered the world group's all_reduce.
      EXPECT_EQ(named["0"], rank_ranges(even)) << r.text;
      EXPECT_EQ(named["1"], rank_ranges(odd)) << r.text;
      break;
    }
  }
}

class AnalyzeAtScale : public ::testing::TestWithParam<std::tuple<Hang, bool>> {};

TEST_P(AnalyzeAtScale, NamesTheSameCulpritAt4And64And4096Ranks) {
  const auto [hang, torch] = GetParam();
  std::map<int, Report> by_size;
  for (int n : {4, 64, 4096}) {
    const SyntheticJob job({.ranks = n, .entries = n > 64 ? 12u : 40u, .hang = hang});
    by_size[n] = analyze_job(job, torch);
    expect_named(job, torch, by_size[n]);
  }
  // 8 ranks per host at 64 and 4,096: the same findings in the same groups, as many lines.
  EXPECT_EQ(shape(by_size[64].j), shape(by_size[4096].j)) << by_size[4096].text;
  EXPECT_EQ(by_size[64].j["first_hung_group"], by_size[4096].j["first_hung_group"]);
  EXPECT_EQ(by_size[64].text_lines, by_size[4096].text_lines) << by_size[64].text << "\n----\n"
                                                              << by_size[4096].text;
  EXPECT_LE(by_size[4096].text_lines, 80u) << by_size[4096].text;
}

INSTANTIATE_TEST_SUITE_P(Hangs, AnalyzeAtScale,
                         ::testing::Combine(::testing::Values(Hang::None, Hang::FrozenRank,
                                                              Hang::FrozenHost, Hang::NeverJoined,
                                                              Hang::OppositeOrder),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           std::string name = testing::hang_name(std::get<0>(info.param));
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name + (std::get<1>(info.param) ? "_pickle" : "_json");
                         });

}  // namespace
}  // namespace collie
