#pragma once
// Inline SVG charts for the HTML report: no scripts, no external assets, deterministic output
// (same input, same bytes) so the HTML report can be checked against a golden file.
// Pure functions; thread-safe.
#include <string>
#include <utility>
#include <vector>

namespace collie::reports {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (size in bytes, value); x > 0
};

struct PlotSpec {
  std::string title, y_label;
  std::string css_class = "plot";  // lets tests and styles find the chart kind
  bool log_y = false;              // latency spans decades; bandwidth reads better linear
  int width = 560, height = 320;
};

// Line chart with x = message size on a log2 axis (labels 8, 1K, 1M, ...), one polyline and
// one circle marker (with a <title> tooltip) per point, and a legend. Series without points
// are listed in the legend only.
std::string line_plot_svg(const PlotSpec& spec, const std::vector<PlotSeries>& series);

// Horizontal-axis bar chart of one value per rank with a dashed reference line at 1.0; bars of
// `highlight` ranks are drawn in the alert color (stragglers).
std::string rank_bars_svg(const std::string& title, const std::vector<double>& values,
                          const std::vector<int>& highlight);

// The series color used for index i (shared with the HTML legend tables).
const char* series_color(size_t i);

}  // namespace collie::reports
