// `collie version`: the version line used in every report header.
#include <cstdio>

#include "cli/command.h"

namespace collie::cli {
namespace {
COLLIE_COMMAND(Command{"version", "print collie's version", [](CLI::App&) {
                         return [] {
                           std::printf("collie %s\n", COLLIE_VERSION);
                           return kExitOk;
                         };
                       }});
}  // namespace
}  // namespace collie::cli
