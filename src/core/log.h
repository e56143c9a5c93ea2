#pragma once
// Process-wide logger: one line per message on stderr, prefixed "[Rank r]" once the rank is
// known. Thread-safe: level and rank are atomics, each line is written with one fwrite.
// The effective level follows torch.distributed's matrix (see effective_log_level).
#include <fmt/format.h>

#include <string_view>

#include "core/export.h"

namespace collie {

enum class LogLevel : int { Trace = 0, Debug = 1, Info = 2, Warning = 3, Error = 4, Off = 5 };
enum class DebugLevel : int { Off = 0, Info = 1, Detail = 2 };

// COLLIE_LOG_LEVEL (fallback TORCH_CPP_LOG_LEVEL): TRACE|DEBUG|INFO|WARNING|ERROR, default
// WARNING. COLLIE_DEBUG (fallback TORCH_DISTRIBUTED_DEBUG): OFF|INFO|DETAIL, default OFF.
// Unknown values throw InvalidArgument naming the variable.
class Env;
COLLIE_API LogLevel parse_log_level(std::string_view s);
COLLIE_API DebugLevel parse_debug_level(std::string_view s);
COLLIE_API std::string_view debug_level_name(DebugLevel d);
// "TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "OFF" (what parse_log_level reads).
COLLIE_API std::string_view log_level_name(LogLevel l);
// torch's matrix: log level INFO with debug INFO gives Debug, with DETAIL gives Trace;
// otherwise the log level as given.
COLLIE_API LogLevel effective_log_level(LogLevel requested, DebugLevel debug);

// Reads both variables from env and applies them. Called by init_process_group and the CLI.
COLLIE_API void configure_logging_from_env(const Env& env);

COLLIE_API void set_log_level(LogLevel level);
COLLIE_API LogLevel log_level();
COLLIE_API void set_debug_level(DebugLevel level);
COLLIE_API DebugLevel debug_level();
COLLIE_API void set_log_rank(int rank);  // -1 = unknown (no prefix)

COLLIE_API bool log_enabled(LogLevel level);
COLLIE_API void log_line(LogLevel level, std::string_view msg);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (!log_enabled(level)) return;
  log_line(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace collie
