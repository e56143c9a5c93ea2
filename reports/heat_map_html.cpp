#include "reports/heat_map_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/stats.h"
#include "reports/markup.h"

namespace collie::reports {
namespace {

using json = nlohmann::json;

// Red (worst) to green (best).
std::string color(double x, double lo, double hi, bool higher_is_better) {
  double t = hi > lo ? (x - lo) / (hi - lo) : 1.0;
  if (!higher_is_better) t = 1 - t;
  return fmt::format("hsl({:.0f},65%,72%)", 120 * std::clamp(t, 0.0, 1.0));
}

}  // namespace

RowSummary summarize_rows(const std::vector<MatrixCell>& cells, bool higher_is_better) {
  auto better = [&](double x, double y) { return higher_is_better ? x > y : x < y; };
  std::unordered_map<int, std::vector<double>> vals;
  std::unordered_map<int, RowScore> by_row;
  for (const auto& c : cells)
    for (const auto& [r, peer] : {std::pair{c.row, c.col}, std::pair{c.col, c.row}}) {
      std::vector<double>& v = vals[r];
      RowScore& row = by_row[r];
      if (v.empty() || better(row.worst, c.value)) {
        row.worst = c.value;
        row.worst_peer = peer;
      }
      v.push_back(c.value);
    }
  RowSummary out;
  std::vector<double> meds;
  for (auto& [r, row] : by_row) {
    row.row = r;
    row.links = vals[r].size();
    row.median = median(vals[r]);
    meds.push_back(row.median);
    out.rows.push_back(row);
  }
  std::sort(out.rows.begin(), out.rows.end(), [&](const RowScore& x, const RowScore& y) {
    return x.median != y.median ? better(y.median, x.median) : x.row < y.row;
  });
  if (meds.empty()) return out;
  out.lo = *std::min_element(meds.begin(), meds.end());
  out.hi = *std::max_element(meds.begin(), meds.end());
  out.reference = median(meds);
  for (double x : meds) {
    const double ref = out.reference;
    const double ratio = ref > 0 && x > 0 ? (higher_is_better ? x / ref : ref / x) : 0;
    out.spread[ratio >= 0.9 ? 0 : ratio >= 0.75 ? 1 : ratio >= 0.5 ? 2 : 3]++;
  }
  return out;
}

std::string heat_map_html(const json& matrix, const std::string& key, const std::string& title,
                          const std::string& unit, bool higher_is_better) {
  if (!matrix.is_object() || !matrix.contains(key) || !matrix[key].is_array()) return "";
  std::vector<std::string> labels;
  if (matrix.contains("units") && matrix["units"].is_array())
    for (const auto& u : matrix["units"])
      labels.push_back(u.is_string() ? u.get<std::string>() : "");
  std::vector<MatrixCell> cells;
  for (const auto& c : matrix[key]) {
    if (!c.is_array() || c.size() < 3 || !c[0].is_number_integer() || !c[1].is_number_integer() ||
        !c[2].is_number())
      continue;
    const int64_t row = c[0].get<int64_t>(), col = c[1].get<int64_t>();
    if (row < 0 || col < 0 || row >= (1 << 30) || col >= (1 << 30)) continue;
    cells.push_back({static_cast<int>(row), static_cast<int>(col), c[2].get<double>()});
  }
  if (cells.empty()) return "";
  // Units without a label (a matrix from elsewhere) go by their number.
  int n = static_cast<int>(labels.size());
  for (const auto& c : cells) n = std::max({n, c.row + 1, c.col + 1});
  auto label = [&](int i) {
    return i >= 0 && i < static_cast<int>(labels.size()) ? labels[i] : std::to_string(i);
  };
  std::string s = "<h3>" + xml_escape(title) + "</h3>\n";
  if (n <= kHtmlHeatMapFull) {
    double lo = cells[0].value, hi = cells[0].value;
    std::map<std::pair<int, int>, double> at;
    for (const auto& c : cells) {
      lo = std::min(lo, c.value);
      hi = std::max(hi, c.value);
      at[{c.row, c.col}] = c.value;
    }
    s += "<table class=\"heatgrid\"><tr><th></th>";
    for (int j = 0; j < n; ++j)
      s += fmt::format("<th title=\"{}\">{}</th>", xml_escape(label(j)), j);
    s += "</tr>\n";
    for (int i = 0; i < n; ++i) {
      s += fmt::format("<tr><th class=\"l\">{} {}</th>", i, xml_escape(label(i)));
      for (int j = 0; j < n; ++j) {
        const auto it = at.find({i, j});
        if (i == j) {
          s += "<td></td>";
        } else if (it == at.end()) {
          s += fmt::format("<td style=\"background:#ddd\" title=\"{} -> {}: not measured\"></td>",
                           xml_escape(label(i)), xml_escape(label(j)));
        } else {
          s += fmt::format("<td style=\"background:{}\" title=\"{} -> {}: {} {}\"></td>",
                           color(it->second, lo, hi, higher_is_better), xml_escape(label(i)),
                           xml_escape(label(j)), num(it->second), xml_escape(unit));
        }
      }
      s += "</tr>\n";
    }
    s += fmt::format("</table>\n<p>red = {} {} {} ... green = {} {} {}; grey = not measured</p>\n",
                     higher_is_better ? "lowest" : "highest", num(higher_is_better ? lo : hi),
                     xml_escape(unit), higher_is_better ? "highest" : "lowest",
                     num(higher_is_better ? hi : lo), xml_escape(unit));
    return s;
  }
  const RowSummary sum = summarize_rows(cells, higher_is_better);
  const size_t shown = std::min<size_t>(sum.rows.size(), kHtmlHeatMapWorst);
  s += fmt::format("<p>{} hosts: the {} worst by the median of their links (both directions)</p>\n",
                   n, shown);
  s += fmt::format(
      "<table class=\"heatmap\"><tr><th class=\"l\">host</th><th>links</th><th>median ({})</th>"
      "<th>worst ({})</th><th class=\"l\">with</th></tr>\n",
      xml_escape(unit), xml_escape(unit));
  for (size_t k = 0; k < shown; ++k) {
    const RowScore& row = sum.rows[k];
    s += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td style=\"background:{}\">{}</td><td>{}</td>"
        "<td class=\"l\">{}</td></tr>\n",
        xml_escape(label(row.row)), row.links, color(row.median, sum.lo, sum.hi, higher_is_better),
        num(row.median), num(row.worst), xml_escape(label(row.worst_peer)));
  }
  s += fmt::format(
      "</table>\n<p>hosts by median against the median host ({} {}): within 10%: {}, 10-25% "
      "worse: {}, 25-50% worse: {}, more than 50% worse: {}, nothing measured: {}</p>\n",
      num(sum.reference), xml_escape(unit), sum.spread[0], sum.spread[1], sum.spread[2],
      sum.spread[3], n - static_cast<int>(sum.rows.size()));
  return s;
}

}  // namespace collie::reports
