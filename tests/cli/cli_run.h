#pragma once
// Running the real `collie` binary (COLLIE_BIN) from a test as a user would from a shell, and a
// scratch folder for the files a command reads or writes. Header-only; for tests/cli.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace collie::testing {

struct CliRun {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

// Runs `collie ARGS` with `env` added to this process's environment, through `prefix` when
// given (e.g. setpriv to drop root); a run still going after `within` fails the test (and is
// killed).
inline CliRun run_collie(const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env = {},
                         std::chrono::seconds within = std::chrono::seconds(30),
                         const std::vector<std::string>& prefix = {}) {
  std::vector<std::string> argv = prefix;
  argv.push_back(COLLIE_BIN);
  argv.insert(argv.end(), args.begin(), args.end());
  const auto t0 = std::chrono::steady_clock::now();
  ChildProcess p(argv, env);
  const auto st = p.wait(within);
  EXPECT_TRUE(st.has_value()) << args[0] << " did not finish in " << within.count() << " s\n"
                              << p.err();
  return {st.value_or(-1), p.out(), p.err(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// A fresh folder under the temporary directory, removed with everything in it at the end.
struct TempDir {
  std::filesystem::path dir;
  explicit TempDir(const std::string& tag)
      : dir(std::filesystem::temp_directory_path() / fmt::format("{}_{}", tag, ::getpid())) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

}  // namespace collie::testing
