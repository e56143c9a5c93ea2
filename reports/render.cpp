#include "reports/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/size.h"
#include "reports/baseline.h"
#include "reports/junit.h"
#include "reports/markup.h"
#include "reports/row_writers.h"
#include "reports/table.h"

namespace collie::reports {

namespace {

SeriesKey series_of(const ResultRow& r) {
  return SeriesKey{r.collective, r.dtype, r.redop, r.placement, r.root};
}

std::vector<const ResultRow*> pointers(const std::vector<ResultRow>& rows) {
  std::vector<const ResultRow*> p;
  for (const auto& r : rows) p.push_back(&r);
  return p;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  std::vector<std::string> v;
  for (int r : ranks) v.push_back(std::to_string(r));
  return "rank " + join(v, ", ");
}

}  // namespace

std::string series_title(const SeriesKey& k) {
  std::string s = k.collective + " " + k.dtype + " " + k.redop + " " +
                  (k.placement == "in" ? "in-place" : "out-of-place");
  if (k.root >= 0 && k.redop != "none") s += " root " + std::to_string(k.root);
  return s;
}

std::vector<SeriesTable> series_tables(const std::vector<LoadedRun>& runs) {
  std::vector<SeriesTable> out;
  std::map<SeriesKey, size_t> index;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    for (auto& row : combine_rows(pointers(runs[ri].result.rows)).rows) {
      const SeriesKey k = series_of(row);
      auto [it, added] = index.emplace(k, out.size());
      if (added) {
        out.push_back(SeriesTable{k, {}, std::vector<std::map<int64_t, ResultRow>>(runs.size())});
      }
      SeriesTable& t = out[it->second];
      t.sizes.push_back(row.size_bytes);
      t.by_run[ri][row.size_bytes] = std::move(row);
    }
  }
  for (auto& t : out) {
    std::sort(t.sizes.begin(), t.sizes.end());
    t.sizes.erase(std::unique(t.sizes.begin(), t.sizes.end()), t.sizes.end());
  }
  return out;
}

std::vector<double> per_rank_ratio(const RunResult& r) {
  const int n = r.meta.world_size;
  std::vector<double> sum(std::max(n, 0), 0);
  int rows = 0;
  for (const auto& row : r.rows) {
    if (static_cast<int>(row.rank_time_us.size()) != n || n < 1) continue;
    const double med = median(row.rank_time_us);
    if (med <= 0) continue;
    for (int k = 0; k < n; ++k) sum[k] += row.rank_time_us[k] / med;
    ++rows;
  }
  if (rows == 0) return {};
  for (double& v : sum) v /= rows;
  return sum;
}

std::string render_markdown(const std::vector<LoadedRun>& runs) {
  std::string s = "# collie perf report\n\n## Runs\n\n|  |";
  std::string sep = "|---|";
  for (const auto& r : runs) {
    s += " " + r.label + " |";
    sep += "---|";
  }
  s += "\n" + sep + "\n";
  auto line = [&](const char* name, auto value_of) {
    s += fmt::format("| {} |", name);
    for (const auto& r : runs) s += fmt::format(" {} |", value_of(r));
    s += "\n";
  };
  line("file", [](const LoadedRun& r) { return "`" + r.path + "`"; });
  line("backend", [](const LoadedRun& r) { return r.result.meta.backend; });
  line("world size", [](const LoadedRun& r) { return std::to_string(r.result.meta.world_size); });
  line("hosts", [](const LoadedRun& r) {
    std::vector<std::string> h = r.result.meta.hosts;
    std::sort(h.begin(), h.end());
    h.erase(std::unique(h.begin(), h.end()), h.end());
    return join(h, ", ");
  });
  line("collie", [](const LoadedRun& r) { return r.result.meta.version; });
  line("started", [](const LoadedRun& r) { return r.result.meta.started_at; });
  line("finished", [](const LoadedRun& r) {
    return r.result.summary ? r.result.meta.finished_at : std::string("interrupted");
  });
  line("baseline of", [](const LoadedRun& r) {
    return r.baseline_runs > 0 ? std::to_string(r.baseline_runs) + " runs" : std::string("-");
  });
  line("avg busbw (GB/s)", [](const LoadedRun& r) {
    return r.result.summary ? num(r.result.summary->avg_busbw_gbps) : std::string("-");
  });
  line("wrong elements", [](const LoadedRun& r) {
    return r.result.summary ? std::to_string(r.result.summary->wrong_total) : std::string("-");
  });
  line("stragglers", [](const LoadedRun& r) {
    return r.result.summary ? ranks_text(r.result.summary->stragglers) : std::string("-");
  });

  for (const auto& t : series_tables(runs)) {
    s += "\n## " + series_title(t.key) + "\n\n| size |";
    std::string sep2 = "|---:|";
    for (const auto& r : runs) {
      s += fmt::format(" {} time (us) | {} busbw (GB/s) |", r.label, r.label);
      sep2 += "---:|---:|";
    }
    s += "\n" + sep2 + "\n";
    for (int64_t size : t.sizes) {
      s += "| " + size_label(size) + " |";
      for (const auto& by : t.by_run) {
        auto it = by.find(size);
        if (it == by.end()) {
          s += " - | - |";
          continue;
        }
        const ResultRow& row = it->second;
        const std::string wrong = row.wrong > 0 ? fmt::format(" ({} wrong)", row.wrong) : "";
        s += fmt::format(" {} | {}{} |", num(row.time_us), num(row.busbw_gbps), wrong);
      }
      s += "\n";
    }
  }

  bool any_ranks = false;
  for (const auto& r : runs) any_ranks |= !per_rank_ratio(r.result).empty();
  if (any_ranks) {
    s += "\n## Per-rank time (mean of rank time / median rank time over all rows)\n\n| rank |";
    std::string sep3 = "|---:|";
    size_t max_ranks = 0;
    for (const auto& r : runs) {
      s += " " + r.label + " |";
      sep3 += "---:|";
      max_ranks = std::max(max_ranks, per_rank_ratio(r.result).size());
    }
    s += "\n" + sep3 + "\n";
    for (size_t k = 0; k < max_ranks; ++k) {
      s += fmt::format("| {} |", k);
      for (const auto& r : runs) {
        const auto ratio = per_rank_ratio(r.result);
        const auto& st = r.result.summary ? r.result.summary->stragglers : std::vector<int>{};
        const bool slow = std::find(st.begin(), st.end(), static_cast<int>(k)) != st.end();
        s += k < ratio.size() ? fmt::format(" {:.2f}{} |", ratio[k], slow ? " **straggler**" : "")
                              : std::string(" - |");
      }
      s += "\n";
    }
  }
  return s;
}

std::string render_junit(const std::vector<LoadedRun>& runs) {
  std::vector<JunitSuite> suites;
  for (const auto& run : runs) {
    std::map<std::string, size_t> by_collective;
    for (const auto& row : run.result.rows) {
      auto [it, added] = by_collective.emplace(row.collective, suites.size());
      if (added) suites.emplace_back().name = "collie.perf." + run.label + "." + row.collective;
      JunitSuite& su = suites[it->second];
      JunitCase& c = su.cases.emplace_back();
      c.name =
          fmt::format("{} B {} {} {}{}{}", row.size_bytes, row.dtype, row.redop, row.placement,
                      row.root >= 0 && row.redop != "none" ? fmt::format(" root {}", row.root) : "",
                      row.cycle > 0 ? fmt::format(" cycle {}", row.cycle) : "");
      c.classname = su.name;
      c.seconds = row.time_us * row.iters / 1e6;
      if (row.wrong > 0) {
        c.outcome = JunitCase::Outcome::Failure;
        c.message = fmt::format("{} wrong elements (first on rank {} at element {})", row.wrong,
                                row.wrong_rank, row.wrong_offset);
        c.type = "wrong-data";
      }
      c.system_out = fmt::format("time {} us, algbw {} GB/s, busbw {} GB/s, #wrong {}",
                                 num(row.time_us), num(row.algbw_gbps), num(row.busbw_gbps),
                                 row.wrong < 0 ? "N/A" : std::to_string(row.wrong));
    }
    if (!run.result.summary) {
      JunitSuite& su = suites.emplace_back();
      su.name = "collie.perf." + run.label + ".run";
      JunitCase& c = su.cases.emplace_back();
      c.name = "run complete";
      c.classname = su.name;
      c.outcome = JunitCase::Outcome::Error;
      c.message = fmt::format("{} has no summary: the run was interrupted after {} rows", run.path,
                              run.result.rows.size());
      c.type = "incomplete";
    }
  }
  return junit_xml("collie perf", suites);
}

namespace {

// One table line per size/dtype/op/root/cycle: out-of-place and in-place side by side. A row
// joins the earliest line of its key that still lacks its placement, else starts one (the
// pairing of a scan over the later rows, in O(n log n) instead of O(n^2)).
std::vector<std::pair<const ResultRow*, const ResultRow*>> pair_rows(
    const std::vector<const ResultRow*>& rows) {
  using Key = std::tuple<int64_t, std::string, std::string, int, int>;
  std::vector<std::pair<const ResultRow*, const ResultRow*>> lines;  // {out, in}
  std::map<Key, std::deque<size_t>> lacks_out, lacks_in;
  for (const ResultRow* r : rows) {
    const Key k{r->size_bytes, r->dtype, r->redop, r->root, r->cycle};
    const bool out = r->placement == "out", in = r->placement == "in";
    auto& open = out ? lacks_out[k] : lacks_in[k];
    if ((out || in) && !open.empty()) {
      auto& line = lines[open.front()];
      (out ? line.first : line.second) = r;
      open.pop_front();
      continue;
    }
    // Anything but "out" takes the in-place column, as before.
    lines.emplace_back(out ? r : nullptr, out ? nullptr : r);
    (out ? lacks_in[k] : lacks_out[k]).push_back(lines.size() - 1);
  }
  return lines;
}

}  // namespace

std::string render_table(const std::vector<LoadedRun>& runs) {
  std::string s;
  for (const auto& run : runs) {
    const RunMeta& m = run.result.meta;
    s += fmt::format("# collie report: {} ({}), backend {}, {} ranks, collie {}\n", run.label,
                     run.path, m.backend, m.world_size, m.version);
    std::vector<std::string> collectives;  // in order of first appearance
    std::map<std::string, std::vector<const ResultRow*>> by_collective;
    for (const auto& r : run.result.rows) {
      auto& v = by_collective[r.collective];
      if (v.empty()) collectives.push_back(r.collective);
      v.push_back(&r);
    }
    for (const auto& coll : collectives) {
      s += "#\n# Collective test starting: " + coll + "_perf\n#\n" + format_column_header();
      const std::vector<const ResultRow*>& ptrs = by_collective[coll];
      for (const auto& [out, in] : pair_rows(ptrs)) s += format_row(out, in) + "\n";
      // One collective (the usual file): its rows are the run's, no copy.
      std::vector<ResultRow> copy;
      if (collectives.size() > 1) {
        copy.reserve(ptrs.size());
        for (const ResultRow* r : ptrs) copy.push_back(*r);
      }
      const std::vector<ResultRow>& rows = collectives.size() > 1 ? copy : run.result.rows;
      const Summary sum = summarize(rows, m.world_size);
      s += format_straggler_line(rows, sum) + format_trailer(coll, sum);
    }
  }
  return s;
}

std::string render_csv(const std::vector<LoadedRun>& runs) {
  // CsvWriter owns the row format; with several runs each line gets the run's label in front.
  // Built in memory (no temporary file beside the output for someone to plant a link at).
  const bool labelled = runs.size() > 1;
  std::string out = labelled ? std::string("source,") + CsvWriter::header() : CsvWriter::header();
  for (const LoadedRun& run : runs) {
    for (const auto& r : run.result.rows) {
      if (labelled) out += run.label + ",";
      out += CsvWriter::row(r);
    }
  }
  return out;
}

}  // namespace collie::reports
