#include "reports/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/size.h"
#include "reports/markup.h"
#include "reports/render.h"
#include "reports/svg_plot.h"

namespace collie::reports {

namespace {

std::string meta_table(const std::vector<LoadedRun>& runs) {
  std::string s = "<table class=\"meta\"><tr><th class=\"l\"></th>";
  for (const auto& r : runs) s += "<th class=\"l\">" + xml_escape(r.label) + "</th>";
  s += "</tr>\n";
  auto row = [&](const char* name, auto value_of) {
    s += fmt::format("<tr><th class=\"l\">{}</th>", name);
    for (const auto& r : runs) s += "<td class=\"l\">" + xml_escape(value_of(r)) + "</td>";
    s += "</tr>\n";
  };
  row("file", [](const LoadedRun& r) { return r.path; });
  row("backend", [](const LoadedRun& r) { return r.result.meta.backend; });
  row("world size", [](const LoadedRun& r) { return std::to_string(r.result.meta.world_size); });
  row("hosts", [](const LoadedRun& r) {
    std::set<std::string> h(r.result.meta.hosts.begin(), r.result.meta.hosts.end());
    std::string s;
    for (const auto& x : h) s += (s.empty() ? "" : ", ") + x;
    return s;
  });
  row("collie", [](const LoadedRun& r) { return r.result.meta.version; });
  row("libraries", [](const LoadedRun& r) {
    std::string s;
    for (const auto& [k, v] : r.result.meta.library_versions)
      s += (s.empty() ? "" : ", ") + k + " " + v;
    return s;
  });
  row("flags", [](const LoadedRun& r) {
    std::string s;
    for (const auto& [k, v] : r.result.meta.flags) s += (s.empty() ? "" : " ") + k + "=" + v;
    return s;
  });
  row("started", [](const LoadedRun& r) { return r.result.meta.started_at; });
  row("finished", [](const LoadedRun& r) {
    return r.result.summary ? r.result.meta.finished_at : std::string("interrupted");
  });
  row("avg busbw (GB/s)", [](const LoadedRun& r) {
    return r.result.summary ? num(r.result.summary->avg_busbw_gbps) : std::string("-");
  });
  row("wrong elements", [](const LoadedRun& r) {
    return r.result.summary ? std::to_string(r.result.summary->wrong_total) : std::string("-");
  });
  return s + "</table>\n";
}

std::string collective_section(const std::string& coll, const std::vector<SeriesTable>& tables,
                               const std::vector<LoadedRun>& runs) {
  int combos = 0;
  for (const auto& t : tables) combos += t.key.collective == coll;
  std::vector<PlotSeries> bw, lat;
  std::string data;
  for (const auto& t : tables) {
    if (t.key.collective != coll) continue;
    const std::string combo = series_title(t.key).substr(coll.size() + 1);
    for (size_t ri = 0; ri < runs.size(); ++ri) {
      if (t.by_run[ri].empty()) continue;  // this run did not measure this curve
      const std::string name = combos > 1 ? runs[ri].label + " " + combo : runs[ri].label;
      PlotSeries b{name, {}}, l{name, {}};
      for (const auto& [size, row] : t.by_run[ri]) {
        b.points.emplace_back(static_cast<double>(size), row.busbw_gbps);
        l.points.emplace_back(static_cast<double>(size), row.time_us);
      }
      bw.push_back(std::move(b));
      lat.push_back(std::move(l));
    }
    data +=
        "<h4>" + xml_escape(series_title(t.key)) + "</h4>\n<table class=\"data\"><tr><th>size</th>";
    for (const auto& r : runs)
      data += fmt::format(
          "<th>{0} time (us)</th><th>{0} algbw (GB/s)</th><th>{0} busbw (GB/s)</th>"
          "<th>{0} #wrong</th>",
          xml_escape(r.label));
    data += "</tr>\n";
    for (int64_t size : t.sizes) {
      data += "<tr><td>" + size_label(size) + "</td>";
      for (const auto& by : t.by_run) {
        auto it = by.find(size);
        if (it == by.end()) {
          data += "<td>-</td><td>-</td><td>-</td><td>-</td>";
          continue;
        }
        const ResultRow& r = it->second;
        data += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td{}>{}</td>", num(r.time_us),
                            num(r.algbw_gbps), num(r.busbw_gbps),
                            r.wrong > 0 ? " class=\"straggler\"" : "",
                            r.wrong < 0 ? "N/A" : std::to_string(r.wrong));
      }
      data += "</tr>\n";
    }
    data += "</table>\n";
  }
  std::string s = "<section class=\"collective\" id=\"" + xml_escape(coll) + "\">\n<h2>" +
                  xml_escape(coll) + "</h2>\n<div class=\"plots\">\n";
  s += line_plot_svg(PlotSpec{coll + ": bus bandwidth", "busbw (GB/s)", "plot busbw-plot", false},
                     bw);
  s += line_plot_svg(PlotSpec{coll + ": latency", "time (us)", "plot latency-plot", true}, lat);
  s += "</div>\n<details><summary>numbers</summary>\n" + data + "</details>\n</section>\n";
  return s;
}

std::string rank_section(const LoadedRun& run) {
  const std::vector<double> ratio = per_rank_ratio(run.result);
  if (ratio.empty()) return "";
  const std::vector<int> stragglers =
      run.result.summary ? run.result.summary->stragglers : std::vector<int>{};
  std::string s = "<h3>" + xml_escape(run.label) + "</h3>\n<p>Stragglers: ";
  if (stragglers.empty()) s += "none";
  for (size_t i = 0; i < stragglers.size(); ++i)
    s += fmt::format("{}<span class=\"straggler\">rank {}</span>", i ? ", " : "", stragglers[i]);
  s += " (a rank more than 20 % slower than the median rank in most rows).</p>\n";
  s += rank_bars_svg(run.label + ": mean time per rank / median rank", ratio, stragglers);
  // Heat table: each row's per-rank time relative to that row's median rank.
  s += "<details><summary>per size</summary>\n<table class=\"ranks\"><tr><th class=\"l\">row</th>";
  for (size_t k = 0; k < ratio.size(); ++k) s += fmt::format("<th>{}</th>", k);
  s += "</tr>\n";
  for (const auto& row : run.result.rows) {
    if (row.rank_time_us.size() != ratio.size()) continue;
    const double med = median(row.rank_time_us);
    s += fmt::format("<tr><td class=\"l\">{} {} {}</td>", xml_escape(row.collective),
                     size_label(row.size_bytes), xml_escape(row.placement));
    for (double t : row.rank_time_us) {
      const double r = med > 0 ? t / med : 1;
      const int shade = std::clamp(static_cast<int>(255 - (r - 1) * 400), 90, 255);
      s += fmt::format("<td style=\"background:rgb(255,{0},{0})\">{1:.2f}</td>", shade, r);
    }
    s += "</tr>\n";
  }
  return s + "</table>\n</details>\n";
}

}  // namespace

std::string render_html(const std::vector<LoadedRun>& runs) {
  std::string title = "collie perf report:";
  for (const auto& r : runs) title += " " + r.label;
  std::string s = "<h1>" + xml_escape(title) + "</h1>\n<h2>Runs</h2>\n" + meta_table(runs);
  const std::vector<SeriesTable> tables = series_tables(runs);
  std::vector<std::string> collectives;
  for (const auto& t : tables)
    if (std::find(collectives.begin(), collectives.end(), t.key.collective) == collectives.end())
      collectives.push_back(t.key.collective);
  for (const auto& c : collectives) s += collective_section(c, tables, runs);
  std::string ranks;
  for (const auto& r : runs) ranks += rank_section(r);
  if (!ranks.empty())
    s += "<section class=\"ranks\">\n<h2>Per-rank view</h2>\n" + ranks + "</section>\n";
  return html_page(title, s);
}

}  // namespace collie::reports
