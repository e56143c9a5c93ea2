// `collie` entry point: builds the CLI11 app from the registered subcommands.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/env.h"
#include "core/error.h"
#include "core/fd_limit.h"
#include "core/log.h"
#include "core/printable.h"
#include "discovery/end_slurm_step.h"

namespace collie::cli {

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> cmds = {
      &perf_command(),     &probe_command(),  &accept_command(), &analyze_command(),
      &evidence_command(), &replay_command(), &report_command(), &launch_command(),
      &info_command(),     &version_command()};
  return cmds;
}

// Messages carry text from files, stores and remote ranks: printed through core/printable.h, so
// they stay one line and cannot drive the terminal.
int report_exception(const std::string& command) {
  const auto say = [&](const char* kind, const char* what) {
    std::fprintf(stderr, "collie %s: %s: %s\n", command.c_str(), kind, printable(what).c_str());
  };
  try {
    throw;
  } catch (const InvalidArgument& e) {
    say("error", e.what());
    return kExitUsage;
  } catch (const DeviceError& e) {
    say("error", e.what());
    return kExitUsage;
  } catch (const TimeoutError& e) {
    say("timeout", e.what());
    return kExitTimeout;
  } catch (const Error& e) {
    say("error", e.what());
    return kExitRuntime;
  } catch (const std::exception& e) {
    say("internal error", e.what());
    return kExitRuntime;
  }
}

// The longest flag-parsing message printed whole (a value of up to 128 KiB can be in it).
constexpr size_t kMaxParseMessage = 240;

// nccl-tests spells some flags with one dash and several letters (-np); CLI11 would read them
// as bundled short flags, so they are rewritten to their long form first.
std::vector<std::string> normalize_args(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-np") a = "--np";
    out.push_back(a);
  }
  return out;
}

}  // namespace collie::cli

int main(int argc, char** argv) {
  using namespace collie::cli;
  // A launcher of N ranks holds pipes per rank, rank 0 a store connection per rank.
  collie::raise_fd_limit();
  CLI::App app{"collie: benchmark and debug collective communication"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("collie ") + COLLIE_VERSION);
  std::function<int()> chosen;
  std::string chosen_name;
  for (const Command* c : commands()) {
    CLI::App* sub = app.add_subcommand(c->name, c->help);
    auto run = c->setup(*sub);
    sub->callback([run, &chosen, &chosen_name, name = c->name] {
      chosen = run;
      chosen_name = name;
    });
  }
  std::vector<std::string> args = normalize_args(argc, argv);
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  try {
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 names the bad value whole ("Could not convert: --np = ..."): a huge one is cut.
    const std::string what = e.what();
    const std::string msg = what.size() <= kMaxParseMessage ? collie::printable(what)
                                                            : collie::quote(what, kMaxParseMessage);
    std::fprintf(stderr, "collie: error: %s (see collie --help)\n", msg.c_str());
    return kExitUsage;
  }
  if (!chosen) return kExitUsage;
  int rc = kExitRuntime;
  try {
    rc = chosen();
  } catch (...) {
    rc = report_exception(chosen_name);
  }
  // A failed task under srun ends its step, so the other tasks do not wait for it forever.
  std::fflush(stdout);
  collie::end_slurm_step_on_failure(collie::Env::process(), rc);
  return rc;
}
