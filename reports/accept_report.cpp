#include "reports/accept_report.h"

#include <fmt/format.h>

#include <set>

#include "core/error.h"
#include "reports/heat_map_html.h"
#include "reports/json_io.h"
#include "reports/junit.h"
#include "reports/markup.h"
#include "reports/svg_plot.h"

namespace collie::reports {
namespace {

using json = nlohmann::json;

size_t host_count(const std::vector<std::string>& hosts) {
  return std::set<std::string>(hosts.begin(), hosts.end()).size();
}

size_t failed_count(const AcceptReport& r) {
  size_t n = 0;
  for (const auto& c : r.checks) n += !c.passed;
  return n;
}

size_t warned_count(const AcceptReport& r) {
  size_t n = 0;
  for (const auto& c : r.checks) n += c.passed && c.undecided.empty() && !c.warnings.empty();
  return n;
}

size_t undecided_count(const AcceptReport& r) {
  size_t n = 0;
  for (const auto& c : r.checks) n += c.passed && !c.undecided.empty();
  return n;
}

std::string verdict(const AcceptReport& r) {
  return !r.passed()              ? "REJECTED"
         : undecided_count(r) > 0 ? "INCONCLUSIVE"
         : warned_count(r) > 0    ? "ACCEPTED WITH WARNINGS"
                                  : "ACCEPTED";
}

const char* result_word(const CheckOutcome& c) {
  return !c.passed              ? "FAIL"
         : !c.undecided.empty() ? "INCONCLUSIVE"
         : c.warnings.empty()   ? "PASS"
                                : "WARN";
}

// The same in the Markdown and HTML pages, which have always said "pass".
const char* page_word(const CheckOutcome& c) {
  return !c.passed              ? "FAIL"
         : !c.undecided.empty() ? "inconclusive"
         : c.warnings.empty()   ? "pass"
                                : "warn";
}

// Findings with fault codes get the code, severity and next-step columns.
bool coded(const CheckOutcome& c) {
  for (const auto& x : c.findings)
    if (!x.code.empty()) return true;
  return false;
}

// " [HOST_SLOW CRIT]" after the evidence of coded findings.
std::string code_tag(const Finding& x) {
  if (x.code.empty()) return "";
  return fmt::format(" [{}{}]", x.code, x.severity.empty() ? "" : " " + x.severity);
}

std::string headline(const AcceptReport& r) {
  return fmt::format("{} ranks on {} hosts, backend {}", r.world, host_count(r.hosts), r.backend);
}

// "rule broken: ..." lines, then "KIND WHO: EVIDENCE" lines.
std::string evidence_text(const CheckOutcome& c, const char* indent) {
  std::string s;
  for (const auto& f : c.failures) s += fmt::format("{}rule broken: {}\n", indent, f);
  for (const auto& w : c.warnings) s += fmt::format("{}warning: {}\n", indent, w);
  for (const auto& u : c.undecided) s += fmt::format("{}inconclusive: {}\n", indent, u);
  for (const auto& x : c.findings) {
    s += fmt::format("{}{} {}: {}{}\n", indent, x.kind, x.who, x.evidence, code_tag(x));
    if (!x.next_step.empty()) s += fmt::format("{}  next step: {}\n", indent, x.next_step);
  }
  return s;
}

// Bus bandwidth against size, one curve per dtype/op/placement of the check's rows.
std::string perf_plot(const CheckOutcome& c) {
  std::map<std::string, PlotSeries> by_curve;
  for (const auto& row : c.rows) {
    const std::string name = fmt::format("{} {} {}", row.dtype, row.redop, row.placement);
    by_curve[name].name = name;
    if (row.size_bytes > 0)
      by_curve[name].points.emplace_back(static_cast<double>(row.size_bytes), row.busbw_gbps);
  }
  std::vector<PlotSeries> series;
  for (auto& [name, s] : by_curve) series.push_back(std::move(s));
  return line_plot_svg(PlotSpec{c.name + ": bus bandwidth", "busbw (GB/s)", "plot busbw-plot"},
                       series);
}

}  // namespace

bool AcceptReport::passed() const { return failed_count(*this) == 0; }

std::string AcceptReport::verdict() const {
  return !passed()                    ? "CRIT"
         : undecided_count(*this) > 0 ? "INCONCLUSIVE"
         : warned_count(*this) > 0    ? "WARN"
                                      : "OK";
}

json accept_json(const AcceptReport& r) {
  json j;
  j["schema"] = kAcceptSchemaName;
  j["name"] = r.name;
  j["backend"] = r.backend;
  j["world_size"] = r.world;
  j["hosts"] = r.hosts;
  j["baseline"] = r.baseline;
  j["passed"] = r.passed();
  j["verdict"] = r.verdict();
  j["checks"] = json::array();
  for (const auto& c : r.checks) {
    json f = json::array();
    for (const auto& x : c.findings) {
      json fx{{"kind", x.kind}, {"who", x.who}, {"evidence", x.evidence}};
      if (!x.code.empty()) {
        fx["code"] = x.code;
        fx["severity"] = x.severity;
        fx["next_step"] = x.next_step;
      }
      f.push_back(std::move(fx));
    }
    json cj = {{"name", c.name},         {"kind", c.kind},       {"passed", c.passed},
               {"verdict", c.verdict()}, {"seconds", c.seconds}, {"failures", c.failures},
               {"warnings", c.warnings}, {"findings", f},        {"metrics", c.metrics},
               {"details", c.details}};
    if (!c.undecided.empty()) cj["inconclusive"] = c.undecided;
    if (!c.rows.empty()) {
      cj["rows"] = json::array();
      for (const auto& row : c.rows) cj["rows"].push_back(to_json(row));
    }
    j["checks"].push_back(std::move(cj));
  }
  return j;
}

std::string accept_text(const AcceptReport& r) {
  std::string out = fmt::format("# collie accept: {} ({})\n", r.name, headline(r));
  for (const auto& c : r.checks) {
    out += c.text;
    out += fmt::format("{} {} ({:.1f} s)\n", result_word(c), c.name, c.seconds);
    out += evidence_text(c, "  ");
  }
  if (!r.passed())
    out += fmt::format("REJECTED: {} of {} checks failed\n", failed_count(r), r.checks.size());
  else if (undecided_count(r) > 0)
    out += fmt::format(
        "INCONCLUSIVE: no check failed, {} of {} could not decide; re-run to decide (see "
        "'inconclusive:' above)\n",
        undecided_count(r), r.checks.size());
  else if (warned_count(r) > 0)
    out += fmt::format("ACCEPTED WITH WARNINGS: all {} checks passed, {} with warnings\n",
                       r.checks.size(), warned_count(r));
  else
    out += fmt::format("ACCEPTED: all {} checks passed\n", r.checks.size());
  return out;
}

std::string accept_markdown(const AcceptReport& r) {
  std::string out = fmt::format("# Acceptance: {}\n\n**{}** — {}\n\n", md_cell(r.name), verdict(r),
                                md_cell(headline(r)));
  if (!r.baseline.empty()) out += fmt::format("Baseline: `{}`\n\n", r.baseline);
  out += "| check | kind | result | time (s) |\n|---|---|---|---:|\n";
  for (const auto& c : r.checks)
    out += fmt::format("| {} | {} | {} | {:.1f} |\n", md_cell(c.name), c.kind,
                       !c.passed              ? "**FAIL**"
                       : !c.undecided.empty() ? "*inconclusive*"
                       : c.warnings.empty()   ? "pass"
                                              : "*warn*",
                       c.seconds);
  for (const auto& c : r.checks) {
    out += fmt::format("\n## {} — {}\n\n", md_cell(c.name), page_word(c));
    for (const auto& f : c.failures) out += "- rule broken: " + md_cell(f) + "\n";
    for (const auto& w : c.warnings) out += "- warning: " + md_cell(w) + "\n";
    for (const auto& u : c.undecided) out += "- inconclusive: " + md_cell(u) + "\n";
    if (!c.failures.empty() || !c.warnings.empty() || !c.undecided.empty()) out += "\n";
    if (!c.findings.empty() && !coded(c)) {
      out += "| kind | who | evidence |\n|---|---|---|\n";
      for (const auto& x : c.findings)
        out += fmt::format("| {} | {} | {} |\n", x.kind, md_cell(x.who), md_cell(x.evidence));
      out += "\n";
    } else if (!c.findings.empty()) {
      out += "| kind | who | code | severity | evidence | next step |\n|---|---|---|---|---|---|\n";
      for (const auto& x : c.findings)
        out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", x.kind, md_cell(x.who),
                           md_cell(x.code), md_cell(x.severity), md_cell(x.evidence),
                           md_cell(x.next_step));
      out += "\n";
    }
    out += "```\n" + c.text + "```\n";
  }
  return out;
}

std::string accept_junit(const AcceptReport& r) {
  JunitSuite su;
  su.name = "collie.accept." + r.name;
  su.properties = {{"backend", r.backend},
                   {"world_size", std::to_string(r.world)},
                   {"hosts", std::to_string(host_count(r.hosts))},
                   {"verdict", verdict(r)}};
  if (!r.baseline.empty()) su.properties.emplace_back("baseline", r.baseline);
  for (const auto& c : r.checks) {
    JunitCase& t = su.cases.emplace_back();
    t.name = c.name;
    t.classname = "collie.accept." + c.kind;
    t.seconds = c.seconds;
    t.system_out = c.text;
    if (!c.warnings.empty()) t.system_out = evidence_text(c, "") + t.system_out;
    if (c.passed && !c.undecided.empty()) {
      t.outcome = JunitCase::Outcome::Skipped;
      t.message = "inconclusive: " + c.undecided.front();
      continue;
    }
    if (c.passed) continue;
    t.outcome = JunitCase::Outcome::Failure;
    t.message = c.failures.empty() ? "failed" : c.failures.front();
    t.type = "rule";
    t.detail = evidence_text(c, "");
  }
  return junit_xml("collie accept", {su});
}

std::string accept_html(const AcceptReport& r) {
  const auto cls = [](bool ok) { return ok ? "pass" : "fail"; };
  std::string s = fmt::format("<h1>Acceptance: {} — <span class=\"{}\">{}</span></h1>\n",
                              xml_escape(r.name), cls(r.passed()), verdict(r));
  s += "<p>" + xml_escape(headline(r)) + "</p>\n";
  if (!r.baseline.empty()) s += "<p>Baseline: <code>" + xml_escape(r.baseline) + "</code></p>\n";
  s += "<table><tr><th class=\"l\">check</th><th class=\"l\">kind</th><th class=\"l\">result</th>"
       "<th>time (s)</th></tr>\n";
  for (size_t i = 0; i < r.checks.size(); ++i) {
    const CheckOutcome& c = r.checks[i];
    s += fmt::format(
        "<tr><td class=\"l\"><a href=\"#c{}\">{}</a></td><td class=\"l\">{}</td>"
        "<td class=\"l {}\">{}</td><td>{:.1f}</td></tr>\n",
        i, xml_escape(c.name), xml_escape(c.kind), cls(c.passed), page_word(c), c.seconds);
  }
  s += "</table>\n";
  for (size_t i = 0; i < r.checks.size(); ++i) {
    const CheckOutcome& c = r.checks[i];
    s += fmt::format(
        "<section class=\"check\" id=\"c{}\">\n<h2>{} — <span class=\"{}\">{}</span>"
        "</h2>\n",
        i, xml_escape(c.name), cls(c.passed), page_word(c));
    if (!c.failures.empty() || !c.warnings.empty() || !c.undecided.empty()) {
      s += "<ul>\n";
      for (const auto& f : c.failures) s += "<li>" + xml_escape(f) + "</li>\n";
      for (const auto& w : c.warnings) s += "<li>warning: " + xml_escape(w) + "</li>\n";
      for (const auto& u : c.undecided) s += "<li>inconclusive: " + xml_escape(u) + "</li>\n";
      s += "</ul>\n";
    }
    if (!c.findings.empty() && !coded(c)) {
      s += "<table class=\"findings\"><tr><th class=\"l\">kind</th><th class=\"l\">who</th>"
           "<th class=\"l\">evidence</th></tr>\n";
      for (const auto& x : c.findings)
        s += fmt::format(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}"
            "</td></tr>\n",
            xml_escape(x.kind), xml_escape(x.who), xml_escape(x.evidence));
      s += "</table>\n";
    } else if (!c.findings.empty()) {
      s += "<table class=\"findings\"><tr><th class=\"l\">kind</th><th class=\"l\">who</th>"
           "<th class=\"l\">code</th><th class=\"l\">severity</th>"
           "<th class=\"l\">evidence</th><th class=\"l\">next step</th></tr>\n";
      for (const auto& x : c.findings)
        s += fmt::format(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
            "<td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n",
            xml_escape(x.kind), xml_escape(x.who), xml_escape(x.code), xml_escape(x.severity),
            xml_escape(x.evidence), xml_escape(x.next_step));
      s += "</table>\n";
    }
    if (!c.rows.empty()) s += "<div class=\"plots\">\n" + perf_plot(c) + "</div>\n";
    // Pairwise: the matrix by host (every cell up to 64 hosts, the worst hosts beyond).
    if (c.details.is_object() && c.details.contains("host_matrix")) {
      s += heat_map_html(c.details["host_matrix"], "bandwidth_gbps", "bandwidth by host", "GB/s",
                         true);
      s += heat_map_html(c.details["host_matrix"], "latency_us", "latency by host (one way)", "us",
                         false);
    }
    s += "<pre>" + xml_escape(c.text) + "</pre>\n</section>\n";
  }
  return html_page("collie accept: " + r.name, s);
}

AcceptMetrics read_accept_metrics(const std::string& path) {
  const std::string text = read_report_file(path);
  AcceptMetrics m;
  try {
    json j;
    try {
      j = parse_json_input(text, kMaxResultsDepth);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(
          fmt::format("{} is not a `collie accept` JSON report ({})", path, e.what()));
    }
    if (j.value("schema", "") != kAcceptSchemaName)
      throw InvalidArgument(fmt::format("{} is not a `collie accept` JSON report (schema '{}')",
                                        path, kAcceptSchemaName));
    for (const auto& c : j.at("checks"))
      m[c.at("name").get<std::string>()] = c.at("metrics").get<std::map<std::string, double>>();
  } catch (const json::exception& e) {
    throw InvalidArgument(
        fmt::format("{} is not a `collie accept` JSON report ({})", path, e.what()));
  }
  return m;
}

}  // namespace collie::reports
