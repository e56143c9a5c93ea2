#pragma once
// Output of `collie report compare`: a plain text table (the default, for a terminal or a CI log),
// Markdown (a PR comment or job summary), JSON (tools) and JUnit XML (CI test tabs: one case per
// compared row; regression, wrong-data, missing and an incomplete run are failures, inconclusive
// and new rows are skipped cases).
// Pure functions; thread-safe.
#include <nlohmann/json.hpp>
#include <string>

#include "reports/compare.h"

namespace collie::reports {

std::string compare_text(const CompareReport& r);
std::string compare_markdown(const CompareReport& r);
nlohmann::json compare_json(const CompareReport& r);
std::string compare_junit(const CompareReport& r);
// One line for stderr: "collie report compare: FAIL: 2 regression(s), ..." (or INCONCLUSIVE, PASS).
std::string compare_summary_line(const CompareReport& r);

}  // namespace collie::reports
