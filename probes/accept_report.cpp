// AcceptReport writers: JSON (also the baseline format), Markdown, JUnit XML and HTML.
#include <fmt/format.h>

#include <set>

#include "probes/accept.h"
#include "reports/markup.h"

namespace collie::probes {
namespace {

std::string escape_md(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

size_t host_count(const std::vector<std::string>& hosts) {
  return std::set<std::string>(hosts.begin(), hosts.end()).size();
}

}  // namespace

bool AcceptReport::passed() const {
  for (const auto& c : checks)
    if (!c.passed) return false;
  return true;
}

nlohmann::json AcceptReport::to_json() const {
  nlohmann::json j;
  j["schema"] = "collie.accept.v1";
  j["name"] = name;
  j["backend"] = backend;
  j["world_size"] = world;
  j["hosts"] = hosts;
  j["baseline"] = baseline;
  j["passed"] = passed();
  j["checks"] = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json f = nlohmann::json::array();
    for (const auto& x : c.findings)
      f.push_back({{"kind", x.kind}, {"who", x.who}, {"evidence", x.evidence}});
    j["checks"].push_back({{"name", c.name},
                           {"kind", c.kind},
                           {"passed", c.passed},
                           {"seconds", c.seconds},
                           {"failures", c.failures},
                           {"findings", f},
                           {"metrics", c.metrics},
                           {"details", c.details}});
  }
  return j;
}

std::string AcceptReport::summary_text() const {
  std::string out = fmt::format("# collie accept: {} ({} ranks on {} hosts, backend {})\n", name,
                                world, host_count(hosts), backend);
  for (const auto& c : checks) {
    out += c.text;
    out += fmt::format("{} {} ({:.1f} s)\n", c.passed ? "PASS" : "FAIL", c.name, c.seconds);
    for (const auto& f : c.failures) out += "  rule broken: " + f + "\n";
    for (const auto& x : c.findings) out += fmt::format("  {} {}: {}\n", x.kind, x.who, x.evidence);
  }
  size_t failed = 0;
  for (const auto& c : checks) failed += !c.passed;
  out += passed() ? fmt::format("ACCEPTED: all {} checks passed\n", checks.size())
                  : fmt::format("REJECTED: {} of {} checks failed\n", failed, checks.size());
  return out;
}

std::string AcceptReport::to_markdown() const {
  std::string out = fmt::format(
      "# Acceptance: {}\n\n**{}** — {} ranks on {} hosts, backend `{}`\n\n", escape_md(name),
      passed() ? "ACCEPTED" : "REJECTED", world, host_count(hosts), backend);
  out += "| check | kind | result | time (s) |\n|---|---|---|---|\n";
  for (const auto& c : checks)
    out += fmt::format("| {} | {} | {} | {:.1f} |\n", escape_md(c.name), c.kind,
                       c.passed ? "pass" : "**FAIL**", c.seconds);
  for (const auto& c : checks) {
    out += fmt::format("\n## {} — {}\n\n", escape_md(c.name), c.passed ? "pass" : "FAIL");
    for (const auto& f : c.failures) out += "- rule broken: " + escape_md(f) + "\n";
    if (!c.findings.empty()) {
      out += "\n| kind | who | evidence |\n|---|---|---|\n";
      for (const auto& x : c.findings)
        out += fmt::format("| {} | {} | {} |\n", x.kind, escape_md(x.who), escape_md(x.evidence));
    }
    out += "\n```\n" + c.text + "```\n";
  }
  return out;
}

std::string AcceptReport::to_junit() const {
  size_t failed = 0;
  double total = 0;
  for (const auto& c : checks) {
    failed += !c.passed;
    total += c.seconds;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"collie accept\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
      checks.size(), failed, total);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
                     reports::xml_escape(name), checks.size(), failed, total);
  for (const auto& c : checks) {
    out += fmt::format("    <testcase classname=\"accept.{}\" name=\"{}\" time=\"{:.3f}\">", c.kind,
                       reports::xml_escape(c.name), c.seconds);
    if (!c.passed) {
      std::string body;
      for (const auto& f : c.failures) body += f + "\n";
      for (const auto& x : c.findings)
        body += fmt::format("{} {}: {}\n", x.kind, x.who, x.evidence);
      out += fmt::format("\n      <failure message=\"{}\">{}</failure>\n    ",
                         reports::xml_escape(c.failures.empty() ? "failed" : c.failures.front()),
                         reports::xml_escape(body));
    }
    out += fmt::format("<system-out>{}</system-out></testcase>\n", reports::xml_escape(c.text));
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string AcceptReport::to_html() const {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>collie accept: {}</title>\n"
      "<style>body{{font-family:sans-serif;margin:2em}} .pass{{color:#176f2c}} "
      ".fail{{color:#b00020;font-weight:bold}} table{{border-collapse:collapse}} "
      "td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}} "
      "pre{{background:#f6f6f6;padding:8px;overflow-x:auto}}</style></head><body>\n",
      reports::xml_escape(name));
  out += fmt::format("<h1>Acceptance: {} — <span class=\"{}\">{}</span></h1>\n",
                     reports::xml_escape(name), passed() ? "pass" : "fail",
                     passed() ? "ACCEPTED" : "REJECTED");
  out += fmt::format("<p>{} ranks on {} hosts, backend {}</p>\n", world, host_count(hosts),
                     reports::xml_escape(backend));
  out += "<table><tr><th>check</th><th>kind</th><th>result</th><th>time (s)</th></tr>\n";
  for (const auto& c : checks)
    out += fmt::format(
        "<tr><td><a href=\"#c-{}\">{}</a></td><td>{}</td><td class=\"{}\">{}</td>"
        "<td>{:.1f}</td></tr>\n",
        &c - checks.data(), reports::xml_escape(c.name), c.kind, c.passed ? "pass" : "fail",
        c.passed ? "pass" : "FAIL", c.seconds);
  out += "</table>\n";
  for (const auto& c : checks) {
    out += fmt::format("<h2 id=\"c-{}\">{} — <span class=\"{}\">{}</span></h2>\n",
                       &c - checks.data(), reports::xml_escape(c.name), c.passed ? "pass" : "fail",
                       c.passed ? "pass" : "FAIL");
    if (!c.failures.empty()) {
      out += "<ul>\n";
      for (const auto& f : c.failures) out += "<li>" + reports::xml_escape(f) + "</li>\n";
      out += "</ul>\n";
    }
    if (!c.findings.empty()) {
      out += "<table><tr><th>kind</th><th>who</th><th>evidence</th></tr>\n";
      for (const auto& x : c.findings)
        out +=
            fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", reports::xml_escape(x.kind),
                        reports::xml_escape(x.who), reports::xml_escape(x.evidence));
      out += "</table>\n";
    }
    out += "<pre>" + reports::xml_escape(c.text) + "</pre>\n";
  }
  out += "</body></html>\n";
  return out;
}

}  // namespace collie::probes
