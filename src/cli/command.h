#pragma once
// The `collie` executable's subcommands: each src/cli/cmd_<name>.cpp defines one Command and
// returns it from <name>_command(); commands() lists them all in one plain array, in the order
// `collie --help` shows them (no static registration: what the executable has is read here).
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

// One per cmd_<name>.cpp. Each returns a Command built once, at static initialisation.
const Command& perf_command();
const Command& probe_command();
const Command& accept_command();
const Command& analyze_command();
const Command& evidence_command();
const Command& replay_command();
const Command& report_command();
const Command& launch_command();
const Command& info_command();
const Command& version_command();

// Every subcommand, in help order. Thread safety: call after static initialisation (from main).
const std::vector<const Command*>& commands();

// Maps an exception escaping a command to one stderr line and an exit code (no backtrace).
int report_exception(const std::string& command);

}  // namespace collie::cli
