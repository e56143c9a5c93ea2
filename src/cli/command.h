#pragma once
// Subcommand registry for the `collie` executable. Each src/cli/<name>.cpp registers itself
// with COLLIE_COMMAND; main.cpp knows none of them by name.
// A command's setup() adds its flags to the CLI11 subcommand and returns the function run when
// that subcommand is chosen; the returned int is the process exit status.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/exit_codes.h"

namespace collie::cli {

// Exit codes shared by every subcommand (core/exit_codes.h).
using collie::kExitFailure;
using collie::kExitOk;
using collie::kExitRuntime;
using collie::kExitTimeout;
using collie::kExitUsage;

struct Command {
  std::string name;
  std::string help;
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

bool register_command(Command c);
const std::vector<Command>& commands();

// Maps an exception escaping a command to one stderr line and an exit code (no backtrace).
int report_exception(const std::string& command);

}  // namespace collie::cli

#define COLLIE_CLI_CONCAT2(a, b) a##b
#define COLLIE_CLI_CONCAT(a, b) COLLIE_CLI_CONCAT2(a, b)
#define COLLIE_COMMAND(...)                                    \
  static const bool COLLIE_CLI_CONCAT(collie_cmd_, __LINE__) = \
      ::collie::cli::register_command(__VA_ARGS__)
