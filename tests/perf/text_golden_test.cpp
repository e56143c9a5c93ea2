// Golden files of the nccl-tests text table of every collective, from a real `collie perf all`
// (2 local ranks over Gloo). Every data line is first checked against nccl-tests' printf layout
// ("%12li  %12li  %8s  %6s  %6s" then per placement "  %7s  %6s  %6s  %6g" or "    N/A"); then
// what varies between runs is masked, width for width: time/algbw/busbw cells, pids, host
// names, the bandwidth figures of the summary lines (and the straggler line, which only
// appears when this shared machine was noisy). The rest, headers and trailing spaces included,
// must equal tests/perf/golden/<collective>.txt byte for byte.
// The collectives are the registered ones (all_collectives()); each must have its golden and each
// golden its collective, so a new collective is its descriptor plus its golden, no list to edit.
// Regenerate after an intended change (or make a new collective's): COLLIE_UPDATE_GOLDEN=1
// build/tests/perf/perf_text_golden_test
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "comm/registry.h"
#include "perf/collective.h"

namespace {

std::vector<std::string> registered_collectives() {
  std::vector<std::string> names;
  for (const auto* d : collie::perf::all_collectives()) names.push_back(d->name);
  return names;
}

// The collectives tests/perf/golden/ has a table for (<name>.txt).
std::set<std::string> golden_collectives() {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(COLLIE_PERF_GOLDEN_DIR)) {
    if (e.path().extension() == ".txt") names.insert(e.path().stem().string());
  }
  return names;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A number as nccl-tests' getFloatStr prints it, right-aligned in exactly `width` columns.
bool number_cell(const std::string& line, size_t at, size_t width) {
  static const std::regex num(R"( *\d+(\.\d+)?(e[+-]\d+)?)");
  return at + width <= line.size() && std::regex_match(line.substr(at, width), num);
}

// Checks one data line against nccl-tests' layout and masks its timing cells.
std::string mask_row(const std::string& line) {
  static const std::regex head(
      R"( {0,11}\d{1,12}  {1,12}\d{1,12}  {1,8}\S+  {1,6}\S+  {1,6}-?\d+)");
  EXPECT_TRUE(line.size() >= 52 && std::regex_match(line.substr(0, 52), head)) << line;
  std::string out = line;
  size_t p = 52;
  for (int placement = 0; placement < 2 && p + 32 <= line.size(); ++placement) {
    EXPECT_EQ(line.substr(p, 2) + line.substr(p + 9, 2) + line.substr(p + 17, 2), "      ") << line;
    EXPECT_TRUE(number_cell(line, p + 2, 7)) << "time cell in '" << line << "'";
    EXPECT_TRUE(number_cell(line, p + 11, 6)) << "algbw cell in '" << line << "'";
    EXPECT_TRUE(number_cell(line, p + 19, 6)) << "busbw cell in '" << line << "'";
    out.replace(p + 2, 7, "ttttttt");
    out.replace(p + 11, 6, "aaaaaa");
    out.replace(p + 19, 6, "bbbbbb");
    if (line.compare(p + 25, 7, "    N/A") == 0) {  // nccl-tests' unchecked #wrong
      p += 32;
    } else {
      EXPECT_EQ(line.substr(p + 25, 2), "  ") << line;
      EXPECT_TRUE(number_cell(line, p + 27, 6)) << "#wrong cell in '" << line << "'";
      p += 33;
    }
  }
  EXPECT_EQ(p, line.size()) << "row is not nccl-tests' width: '" << line << "'";
  return out;
}

std::string mask(const std::string& section) {
  static const std::regex device(R"(^(#  Rank +\d+ Group +\d+ )Pid +\d+ on +\S+( device .*)$)");
  static const std::regex figure(
      R"(^(# (Avg bus bandwidth|Peak bus bandwidth|Busbw at max size) +: )\S+)");
  static const std::regex peak_at(R"(^(# Peak bus bandwidth +: X) \(at \d+ B\)$)");
  std::istringstream in(section);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.starts_with("# Straggler:")) continue;
    if (!line.empty() && line[0] != '#') {
      line = mask_row(line);
    } else {
      line = std::regex_replace(line, device, "$1Pid <pid> on <host>$2");
      line = std::regex_replace(line, figure, "$1X");
      line = std::regex_replace(line, peak_at, "$1 (at <size> B)");
    }
    out += line + "\n";
  }
  return out;
}

TEST(PerfTextGolden, EveryCollectiveMatchesNcclTestsLayout) {
  ASSERT_NE(collie::find_backend("gloo"), nullptr)
      << "gloo is a required backend (cmake/Dependencies.cmake) but is not registered";
  const std::string out =
      (std::filesystem::temp_directory_path() / ("collie_text_golden_" + std::to_string(getpid())))
          .string();
  const std::string cmd = std::string(COLLIE_BIN) +
                          " perf all -np 2 -b 1K -e 4K -f 4 -n 2 -w 1 -T 60 >" + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(out);
  const std::string text = slurp(out);
  std::filesystem::remove(out);
  ASSERT_TRUE(text.starts_with("# collie version ")) << text;
  const bool update = std::getenv("COLLIE_UPDATE_GOLDEN") != nullptr;
  const std::vector<std::string> collectives = registered_collectives();
  ASSERT_FALSE(collectives.empty()) << "no perf collective is registered";
  if (!update) {
    const std::set<std::string> registered(collectives.begin(), collectives.end());
    for (const auto& c : registered)
      EXPECT_TRUE(golden_collectives().count(c))
          << c << " has no golden table: COLLIE_UPDATE_GOLDEN=1 makes tests/perf/golden/" << c
          << ".txt; review it before committing";
    for (const auto& g : golden_collectives())
      EXPECT_TRUE(registered.count(g)) << "tests/perf/golden/" << g << ".txt: no such collective";
  }
  for (const auto& c : collectives) {
    const std::string start = "# Collective test starting: " + c + "_perf\n";
    const std::string end = "# Collective test concluded: " + c + "_perf\n";
    const size_t a = text.find(start), b = text.find(end);
    ASSERT_NE(a, std::string::npos) << c << "\n" << text;
    ASSERT_NE(b, std::string::npos) << c << "\n" << text;
    const std::string got = mask(text.substr(a, b + end.size() - a));
    const std::string path = std::string(COLLIE_PERF_GOLDEN_DIR) + "/" + c + ".txt";
    if (update) {
      std::ofstream(path, std::ios::binary) << got;
      continue;
    }
    EXPECT_EQ(got, slurp(path)) << c << " differs from " << path;
  }
}

}  // namespace
