#pragma once
// Small text helpers shared by the Markdown, JUnit and HTML writers. Pure; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

namespace collie::reports {

// Escapes & < > " ' for XML/HTML text and attribute values.
std::string xml_escape(std::string_view s);

// `v` with `digits` significant digits, no exponent for ordinary magnitudes ("0.0123", "4512").
std::string num(double v, int digits = 4);

// "+12.3%" / "-4.0%".
std::string percent(double fraction);

// Text for one Markdown table cell: '|' escaped, newlines folded into spaces.
std::string md_cell(std::string_view s);

// A complete self-contained HTML page around `body` (already HTML) with the report style shared
// by every collie HTML report: tables (class "l" for left-aligned cells), SVG plots, and the
// "pass", "fail" and "straggler" highlight classes. `title` is escaped here.
std::string html_page(std::string_view title, std::string_view body);

}  // namespace collie::reports
