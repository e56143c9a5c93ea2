// `collie version`: the version line used in every report header.
#include <cstdio>

#include "cli/command.h"

namespace collie::cli {
namespace {
const Command kCommand{"version", "print collie's version", [](CLI::App&) {
                         return [] {
                           std::printf("collie %s\n", COLLIE_VERSION);
                           return kExitOk;
                         };
                       }};
}  // namespace

const Command& version_command() { return kCommand; }

}  // namespace collie::cli
