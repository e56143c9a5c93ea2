#pragma once
// The one JUnit XML writer (Ant/Surefire layout, as CI readers expect; validated in the tests
// against tests/reports/report_junit.xsd). Callers describe suites and cases; the writer does the
// counting, the escaping and the element order. Pure function; thread-safe.
#include <string>
#include <utility>
#include <vector>

namespace collie::reports {

struct JunitCase {
  enum class Outcome { Pass, Failure, Error, Skipped };
  std::string name;
  std::string classname;
  double seconds = 0;  // 0 = not timed (written as "0")
  Outcome outcome = Outcome::Pass;
  std::string message;     // failure/error/skipped message attribute
  std::string type;        // failure/error type attribute ("" = none)
  std::string detail;      // failure/error element text ("" = self-closing element)
  std::string system_out;  // "" = no <system-out>
};

struct JunitSuite {
  std::string name;
  std::vector<std::pair<std::string, std::string>> properties;  // name -> value, in order
  std::vector<JunitCase> cases;
};

// `<testsuites name=...>` with every suite; totals are summed from the cases.
std::string junit_xml(const std::string& name, const std::vector<JunitSuite>& suites);

}  // namespace collie::reports
