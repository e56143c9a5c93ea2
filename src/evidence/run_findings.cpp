// Facts and findings from one perf run, whoever wrote it: collie perf -J, nccl-tests -J (with
// -I's per-process times) or nccl-tests' text table.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/stats.h"
#include "evidence/readers.h"
#include "reports/arrival.h"

namespace collie::evidence::detail {

std::string rank_label(int rank, const std::vector<std::string>& hosts) {
  if (rank >= 0 && rank < static_cast<int>(hosts.size()) && hosts[rank] != "?")
    return fmt::format("rank {} ({})", rank, hosts[rank]);
  return fmt::format("rank {}", rank);
}

namespace {

std::string host_of(int rank, const std::vector<std::string>& hosts) {
  return rank >= 0 && rank < static_cast<int>(hosts.size()) && hosts[rank] != "?" ? hosts[rank]
                                                                                  : "";
}

// A finding about one rank (none when rank < 0), with its host when the input names it.
Finding about_rank(FindingType type, int rank, const std::vector<std::string>& hosts,
                   double confidence) {
  Finding f;
  f.type = type;
  f.confidence = confidence;
  if (rank < 0) return f;
  f.who = rank_label(rank, hosts);
  f.ranks = {rank};
  if (const std::string h = host_of(rank, hosts); !h.empty()) f.hosts = {h};
  return f;
}

std::string op_label(const reports::ResultRow& r) {
  return fmt::format("{} {} B {}", r.collective, r.size_bytes, r.placement);
}

void op_facts(const reports::RunResult& run, Evidence& e) {
  for (const auto& r : run.rows) {
    const std::string op = op_label(r);
    e.facts.push_back({"op", -1, "", "", "", op, "busbw_gbps", r.busbw_gbps, "", ""});
    e.facts.push_back({"op", -1, "", "", "", op, "time_us", r.time_us, "", ""});
    if (r.wrong >= 0)
      e.facts.push_back({"op", -1, "", "", "", op, "wrong", static_cast<double>(r.wrong), "", ""});
  }
  for (size_t k = 0; k < run.meta.hosts.size(); ++k)
    e.facts.push_back({"rank", static_cast<int>(k), "", run.meta.hosts[k], "", "", "host", 0,
                       run.meta.hosts[k], run.meta.started_at});
}

// STRAGGLER from -I's arrival statistics (who kept the others waiting) and CPU waits (whose core
// something else kept busy), reports/arrival.h: one finding per rank with either's evidence.
int arrival_findings(const reports::RunResult& run, Evidence& e) {
  int rows_with = 0, cpu_rows = 0;
  for (const auto& r : run.rows) {
    rows_with += r.arrival.iters > 0;
    cpu_rows += !r.rank_cpu_wait.empty();
  }
  if (rows_with == 0) return 0;
  for (const auto& r : run.rows) {
    for (const auto& a : r.arrival.ranks)
      e.facts.push_back({"rank", a.rank, "", host_of(a.rank, run.meta.hosts), "", op_label(r),
                         "late_p50_us", a.late_p50_us, "", ""});
    for (size_t k = 0; k < r.rank_cpu_wait.size(); ++k)
      e.facts.push_back({"rank", static_cast<int>(k), "",
                         host_of(static_cast<int>(k), run.meta.hosts), "", op_label(r), "cpu_wait",
                         r.rank_cpu_wait[k], "", ""});
  }
  std::map<int, std::vector<std::string>> lines;
  for (int rank : reports::find_arrival_stragglers(run.rows)) {
    std::vector<double> lates;
    const reports::ResultRow* worst = nullptr;
    double worst_late = -1, worst_share = 0;
    for (const auto& r : run.rows)
      for (const auto& x : reports::late_ranks(r.arrival))
        if (x.rank == rank) {
          lates.push_back(x.late_p50_us);
          if (x.late_p50_us > worst_late) {
            worst_late = x.late_p50_us;
            worst_share = x.last_fraction;
            worst = &r;
          }
        }
    lines[rank].push_back(fmt::format(
        "arrived last, {:.0f} us after the first rank (median over its rows), in {} of {} rows "
        "with arrival statistics (-I)",
        median(lates), lates.size(), rows_with));
    if (worst)
      lines[rank].push_back(fmt::format(
          "worst at {}: last in {:.0f} % of {} iterations, median {:.0f} us late; skew p50 {:.0f} "
          "us",
          op_label(*worst), worst_share * 100, worst->arrival.iters, worst_late,
          worst->arrival.skew_p50_us));
  }
  for (int rank : reports::find_cpu_stragglers(run.rows)) {
    std::vector<double> mine, others;
    for (const auto& r : run.rows)
      for (size_t k = 0; k < r.rank_cpu_wait.size(); ++k)
        (static_cast<int>(k) == rank ? mine : others).push_back(r.rank_cpu_wait[k]);
    lines[rank].push_back(fmt::format(
        "queued for a core {:.2f} s per second of its timed loops, the others {:.2f} (medians "
        "over {} rows)",
        median(mine), median(others), cpu_rows));
  }
  for (auto& [rank, ev] : lines) {
    Finding f = about_rank(FindingType::Straggler, rank, run.meta.hosts, kMeasured);
    f.evidence = std::move(ev);
    f.next_step =
        "see what else runs on that host and core (top; taskset -p PID): a busy or throttled "
        "CPU delays the rank before and inside every collective; `collie probe stragglers` "
        "re-measures it";
    e.findings.push_back(std::move(f));
  }
  return rows_with;
}

// STRAGGLER from per-rank times (nccl-tests' per_process_max_times_us; collie rows without -I):
// a rank whose own time per call is > 20 % above the median rank's in most rows. Indirect: in a
// collective the rank that waits is not always the one that made it wait.
int time_findings(const reports::RunResult& run, Evidence& e) {
  int rows_with = 0;
  for (const auto& r : run.rows) rows_with += r.rank_time_us.size() > 1;
  if (rows_with == 0) return 0;
  const std::vector<int> slow = reports::find_stragglers(run.rows, run.meta.world_size);
  for (int rank : slow) {
    double worst = 0;
    int over = 0;
    for (const auto& r : run.rows) {
      if (rank >= static_cast<int>(r.rank_time_us.size())) continue;
      const double med = median(r.rank_time_us);
      if (med <= 0) continue;
      const double rel = r.rank_time_us[rank] / med - 1;
      worst = std::max(worst, rel);
      over += rel > 0.2;
    }
    Finding f = about_rank(FindingType::Straggler, rank, run.meta.hosts, kIndirect);
    f.evidence.push_back(fmt::format(
        "its own time per call was > 20 % above the median rank's in {} of {} rows (worst +{:.0f} "
        "%)",
        over, rows_with, worst * 100));
    f.next_step =
        "a rank's own time says it was slow or that it waited; `collie perf -I` (arrival "
        "statistics) names who made the others wait";
    e.findings.push_back(std::move(f));
  }
  return rows_with;
}

// WRONG_DATA from #wrong: collie names the first rank that saw a wrong element; nccl-tests sums
// the count over ranks.
void wrong_findings(const reports::RunResult& run, Evidence& e) {
  std::map<int, std::vector<const reports::ResultRow*>> by_rank;  // -1: rank unknown
  for (const auto& r : run.rows)
    if (r.wrong > 0) by_rank[r.wrong_rank].push_back(&r);
  for (const auto& [rank, rows] : by_rank) {
    Finding f = about_rank(FindingType::WrongData, rank, run.meta.hosts, kStated);
    if (rank < 0) f.who = "the job (which rank is not recorded: #wrong is summed over ranks)";
    for (const auto* r : rows) {
      if (f.evidence.size() == 5) {
        f.evidence.push_back(fmt::format("... and {} more rows", rows.size() - 5));
        break;
      }
      f.evidence.push_back(fmt::format(
          "{} {} {}: {} wrong elements{}", op_label(*r), r->dtype, r->redop, r->wrong,
          r->wrong_offset >= 0 ? fmt::format(", the first at element {}", r->wrong_offset) : ""));
    }
    f.next_step =
        rank >= 0 ? "check that rank's device and host (ECC and memory errors: dmesg, nvidia-smi "
                    "-q -d ECC, dcgmi diag) and re-run collie perf -c 1 on it"
                  : "re-run with collie perf -c 1 -J: it records the first rank that saw a wrong "
                    "element; then check that rank's device (ECC, dcgmi diag)";
    e.findings.push_back(std::move(f));
  }
}

}  // namespace

void read_run(const reports::RunResult& run, Evidence& e) {
  op_facts(run, e);
  const int arrival_rows = arrival_findings(run, e);
  const int time_rows = arrival_rows > 0 ? 0 : time_findings(run, e);
  wrong_findings(run, e);
  std::set<std::string> colls, hosts;
  int64_t wrong = 0;
  for (const auto& r : run.rows) {
    colls.insert(r.collective);
    if (r.wrong > 0) wrong += r.wrong;
  }
  for (const auto& h : run.meta.hosts) hosts.insert(h);
  std::string names;
  for (const auto& c : colls) names += fmt::format("{}{}", names.empty() ? "" : ",", c);
  e.contributed = fmt::format("{} rows of {}; {} ranks on {} hosts; ", run.rows.size(), names,
                              run.meta.world_size, hosts.size());
  e.contributed += arrival_rows > 0 ? fmt::format("arrival statistics in {} rows", arrival_rows)
                   : time_rows > 0  ? fmt::format("per-rank times in {} rows", time_rows)
                                    : std::string("no per-rank timing");
  e.contributed += fmt::format("; #wrong total {}", wrong);
}

}  // namespace collie::evidence::detail
