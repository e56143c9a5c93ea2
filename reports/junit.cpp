#include "reports/junit.h"

#include <fmt/format.h>

#include "reports/markup.h"

namespace collie::reports {
namespace {

struct Counts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  void add(const JunitCase& c) {
    ++tests;
    failures += c.outcome == JunitCase::Outcome::Failure;
    errors += c.outcome == JunitCase::Outcome::Error;
    skipped += c.outcome == JunitCase::Outcome::Skipped;
    seconds += c.seconds;
  }
  std::string attributes() const {
    return fmt::format(R"(tests="{}" failures="{}" errors="{}" skipped="{}" time="{}")", tests,
                       failures, errors, skipped, seconds_text(seconds));
  }
  static std::string seconds_text(double s) { return s == 0 ? "0" : fmt::format("{:.6f}", s); }
};

std::string result_element(const JunitCase& c) {
  const char* tag = c.outcome == JunitCase::Outcome::Failure ? "failure"
                    : c.outcome == JunitCase::Outcome::Error ? "error"
                                                             : "skipped";
  std::string s = fmt::format("      <{} message=\"{}\"", tag, xml_escape(c.message));
  if (!c.type.empty()) s += fmt::format(" type=\"{}\"", xml_escape(c.type));
  if (c.detail.empty()) return s + "/>\n";
  return s + fmt::format(">{}</{}>\n", xml_escape(c.detail), tag);
}

}  // namespace

std::string junit_xml(const std::string& name, const std::vector<JunitSuite>& suites) {
  Counts all;
  for (const auto& su : suites)
    for (const auto& c : su.cases) all.add(c);
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format("<testsuites name=\"{}\" {}>\n", xml_escape(name), all.attributes());
  for (const auto& su : suites) {
    Counts n;
    for (const auto& c : su.cases) n.add(c);
    s += fmt::format("  <testsuite name=\"{}\" {}>\n", xml_escape(su.name), n.attributes());
    if (!su.properties.empty()) {
      s += "    <properties>\n";
      for (const auto& [k, v] : su.properties)
        s += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(k),
                         xml_escape(v));
      s += "    </properties>\n";
    }
    for (const auto& c : su.cases) {
      s +=
          fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{}\">\n",
                      xml_escape(c.name), xml_escape(c.classname), Counts::seconds_text(c.seconds));
      if (c.outcome != JunitCase::Outcome::Pass) s += result_element(c);
      if (!c.system_out.empty())
        s += fmt::format("      <system-out>{}</system-out>\n", xml_escape(c.system_out));
      s += "    </testcase>\n";
    }
    s += "  </testsuite>\n";
  }
  return s + "</testsuites>\n";
}

}  // namespace collie::reports
