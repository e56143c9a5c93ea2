#pragma once
// Output of `collie report compare`: Markdown (for a CI log or a PR comment), JSON (for tools)
// and JUnit XML (for CI test tabs; one test case per compared row, a regression is a failure).
// Pure functions; thread-safe.
#include <nlohmann/json.hpp>
#include <string>

#include "reports/compare.h"

namespace collie::reports {

std::string compare_markdown(const CompareReport& r);
nlohmann::json compare_json(const CompareReport& r);
std::string compare_junit(const CompareReport& r);
// One line for stderr: "collie report compare: FAIL: 2 regressions (...)" or "PASS: ...".
std::string compare_summary_line(const CompareReport& r);

}  // namespace collie::reports
