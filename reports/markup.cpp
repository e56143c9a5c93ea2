#include "reports/markup.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace collie::reports {
namespace {

constexpr const char* kStyle = R"(body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ccc;padding:3px 8px;
text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}td.l,th.l{text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:16px}svg text{font-size:11px;fill:#333}
svg .ptitle{font-size:13px;font-weight:600}svg .grid{stroke:#e5e5e5}svg .axis{stroke:#444}
.straggler,.fail{color:#d62728;font-weight:600}.pass{color:#2ca02c;font-weight:600}details{margin:8px 0}
pre{background:#f6f6f6;padding:8px;overflow-x:auto}
table.heatgrid td{padding:0;min-width:10px;height:10px}table.heatgrid th{padding:0 3px;font-size:70%}
)";

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

std::string num(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return fmt::format("{:g}", v);
  const int mag = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int decimals = std::max(0, digits - 1 - mag);
  return fmt::format("{:.{}f}", v, decimals);
}

std::string percent(double fraction) { return fmt::format("{:+.1f}%", fraction * 100); }

std::string md_cell(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string html_page(std::string_view title, std::string_view body) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>";
  s += xml_escape(title);
  s += "</title>\n<style>";
  s += kStyle;
  s += "</style>\n</head>\n<body>\n";
  s += body;
  return s + "</body>\n</html>\n";
}

}  // namespace collie::reports
