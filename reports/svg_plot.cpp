#include "reports/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/size.h"
#include "reports/markup.h"

namespace collie::reports {

namespace {

constexpr int kLeft = 80, kRight = 16, kTop = 28, kBottom = 44, kLegendRow = 16;

// Round step (1, 2 or 5 × 10^k) giving about `n` intervals over [0, hi].
double nice_step(double hi, int n) {
  const double raw = hi / n;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

}  // namespace

const char* series_color(size_t i) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                  "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return kColors[i % (sizeof kColors / sizeof kColors[0])];
}

std::string line_plot_svg(const PlotSpec& spec, const std::vector<PlotSeries>& series) {
  double xmin = std::numeric_limits<double>::max(), xmax = 0;
  double ymin = std::numeric_limits<double>::max(), ymax = 0;
  for (const auto& s : series)
    for (auto [x, y] : s.points) {
      if (x <= 0 || (spec.log_y && y <= 0)) continue;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (xmax == 0) xmin = 1, xmax = 2, ymin = 1, ymax = 1;
  const double lx0 = std::floor(std::log2(xmin)),
               lx1 = std::max(lx0 + 1, std::ceil(std::log2(xmax)));
  double y0 = 0, y1 = 0, ystep = 0;
  if (spec.log_y) {
    y0 = std::floor(std::log10(ymin));
    y1 = std::max(y0 + 1, std::ceil(std::log10(ymax)));
    ystep = 1;
  } else {
    ystep = nice_step(ymax > 0 ? ymax : 1, 5);
    y1 = std::ceil((ymax > 0 ? ymax : 1) / ystep) * ystep;
  }
  const int legend_h = static_cast<int>(series.size()) * kLegendRow + 8;
  const int W = spec.width, H = spec.height + legend_h;
  const double pw = W - kLeft - kRight, ph = spec.height - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (std::log2(x) - lx0) / (lx1 - lx0) * pw; };
  auto py = [&](double y) {
    const double v = spec.log_y ? std::log10(y) : y;
    return kTop + ph - (v - y0) / (y1 - y0) * ph;
  };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{}\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\">\n<title>{}</title>\n",
      xml_escape(spec.css_class), W, H, W, H, xml_escape(spec.title));
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", W, H);
  s += fmt::format("<text x=\"{}\" y=\"18\" class=\"ptitle\" text-anchor=\"middle\">{}</text>\n",
                   W / 2, xml_escape(spec.title));
  // Grid and tick labels.
  const int xstride = std::max(1, static_cast<int>((lx1 - lx0) / 8) + 1);
  for (int e = static_cast<int>(lx0); e <= static_cast<int>(lx1); e += xstride) {
    const double x = px(std::pow(2.0, e));
    s += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
        x, kTop, x, kTop + ph, x, kTop + ph + 16,
        size_label(static_cast<int64_t>(std::pow(2.0, e))));
  }
  for (double v = y0; v <= y1 + ystep / 2; v += ystep) {
    const double real = spec.log_y ? std::pow(10, v) : v;
    const double y = py(real);
    s += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, y, kLeft + pw, y, kLeft - 6, y + 4, num(real, 3));
  }
  s += fmt::format(
      "<line class=\"axis\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>"
      "<line class=\"axis\" x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1:.1f}\"/>\n",
      kLeft, kTop + ph, kLeft + pw, kTop);
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">size (bytes)</text>\n",
                   kLeft + pw / 2, kTop + ph + 34);
  s += fmt::format(
      "<text x=\"12\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.1f})\">"
      "{}</text>\n",
      kTop + ph / 2, kTop + ph / 2, xml_escape(spec.y_label));
  // Series.
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& se = series[i];
    const char* color = series_color(i);
    std::string pts;
    std::string marks;
    for (auto [x, y] : se.points) {
      if (x <= 0 || (spec.log_y && y <= 0)) continue;
      pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      marks += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {} B, {}</title>"
          "</circle>\n",
          px(x), py(y), color, xml_escape(se.name), static_cast<int64_t>(x), num(y));
    }
    if (!pts.empty()) {
      pts.pop_back();
      s += fmt::format(
          "<polyline class=\"series\" data-series=\"{}\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"2\" points=\"{}\"/>\n",
          xml_escape(se.name), color, pts);
    }
    s += marks;
    const int ly = spec.height + static_cast<int>(i) * kLegendRow;
    s += fmt::format(
        "<rect class=\"legend\" x=\"{}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\">{}</text>\n",
        kLeft, ly, color, kLeft + 18, ly + 10, xml_escape(se.name));
  }
  return s + "</svg>\n";
}

std::string rank_bars_svg(const std::string& title, const std::vector<double>& values,
                          const std::vector<int>& highlight) {
  const int n = static_cast<int>(values.size());
  const int bar = n > 64 ? 6 : 16, gap = n > 64 ? 1 : 4;
  const int W = std::max(320, kLeft + kRight + n * (bar + gap)), H = 220;
  const double ph = H - kTop - kBottom;
  double vmax = 1.0;
  for (double v : values) vmax = std::max(vmax, v);
  vmax = std::ceil(vmax * 10 + 1) / 10;
  auto py = [&](double v) { return kTop + ph - v / vmax * ph; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"rank-plot\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\">\n<title>{}</title>\n",
      W, H, W, H, xml_escape(title));
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", W, H);
  s += fmt::format("<text x=\"{}\" y=\"18\" class=\"ptitle\" text-anchor=\"middle\">{}</text>\n",
                   W / 2, xml_escape(title));
  for (int k = 0; k < n; ++k) {
    const bool slow = std::find(highlight.begin(), highlight.end(), k) != highlight.end();
    const double x = kLeft + k * (bar + gap);
    s += fmt::format(
        "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" "
        "fill=\"{}\"><title>rank {}: {:.2f} x median</title></rect>\n",
        slow ? "bar straggler" : "bar", x, py(values[k]), bar, kTop + ph - py(values[k]),
        slow ? "#d62728" : "#1f77b4", k, values[k]);
    if (n <= 64 || k % 8 == 0)
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                       x + bar / 2.0, kTop + ph + 14, k);
  }
  s += fmt::format(
      "<line class=\"ref\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#555\" "
      "stroke-dasharray=\"4 3\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1.0</text>\n",
      kLeft, py(1.0), W - kRight, py(1.0), kLeft - 6, py(1.0) + 4);
  s += fmt::format(
      "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.1f}</text>\n"
      "<line class=\"axis\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/>\n"
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">rank (time / median rank time)</text>\n",
      kLeft - 6, py(vmax) + 4, vmax, kLeft, kTop + ph, W - kRight, kTop + ph,
      kLeft + (W - kLeft - kRight) / 2.0, H - 10);
  return s + "</svg>\n";
}

}  // namespace collie::reports
