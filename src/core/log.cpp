#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"

namespace collie {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::Warning)};
std::atomic<int> g_debug{static_cast<int>(DebugLevel::Off)};
std::atomic<int> g_rank{-1};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const char* level_tag(LogLevel l) {
  switch (l) {
    case LogLevel::Trace:
      return "T";
    case LogLevel::Debug:
      return "D";
    case LogLevel::Info:
      return "I";
    case LogLevel::Warning:
      return "W";
    case LogLevel::Error:
      return "E";
    case LogLevel::Off:
      return "-";
  }
  return "?";
}

}  // namespace

std::string_view log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Trace:
      return "TRACE";
    case LogLevel::Debug:
      return "DEBUG";
    case LogLevel::Info:
      return "INFO";
    case LogLevel::Warning:
      return "WARNING";
    case LogLevel::Error:
      return "ERROR";
    case LogLevel::Off:
      return "OFF";
  }
  return "?";
}

LogLevel parse_log_level(std::string_view s) {
  const std::string u = upper(s);
  if (u == "TRACE") return LogLevel::Trace;
  if (u == "DEBUG") return LogLevel::Debug;
  if (u == "INFO") return LogLevel::Info;
  if (u == "WARNING" || u == "WARN") return LogLevel::Warning;
  if (u == "ERROR") return LogLevel::Error;
  if (u == "OFF" || u == "FATAL") return LogLevel::Off;
  throw InvalidArgument("log level " + quote(s) +
                        " is not one of TRACE, DEBUG, INFO, WARNING, ERROR");
}

DebugLevel parse_debug_level(std::string_view s) {
  const std::string u = upper(s);
  if (u == "OFF" || u.empty()) return DebugLevel::Off;
  if (u == "INFO") return DebugLevel::Info;
  if (u == "DETAIL") return DebugLevel::Detail;
  throw InvalidArgument("debug level " + quote(s) + " is not one of OFF, INFO, DETAIL");
}

std::string_view debug_level_name(DebugLevel d) {
  switch (d) {
    case DebugLevel::Off:
      return "OFF";
    case DebugLevel::Info:
      return "INFO";
    case DebugLevel::Detail:
      return "DETAIL";
  }
  return "?";
}

LogLevel effective_log_level(LogLevel requested, DebugLevel debug) {
  if (requested != LogLevel::Info) return requested;
  if (debug == DebugLevel::Detail) return LogLevel::Trace;
  if (debug == DebugLevel::Info) return LogLevel::Debug;
  return LogLevel::Info;
}

void configure_logging_from_env(const Env& env) {
  DebugLevel debug = DebugLevel::Off;
  if (auto v = env.first_of({"COLLIE_DEBUG", "TORCH_DISTRIBUTED_DEBUG"})) {
    debug = parse_debug_level(*v);
  }
  LogLevel level = LogLevel::Warning;
  if (auto v = env.first_of({"COLLIE_LOG_LEVEL", "TORCH_CPP_LOG_LEVEL"})) {
    level = parse_log_level(*v);
  }
  set_debug_level(debug);
  set_log_level(effective_log_level(level, debug));
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
void set_debug_level(DebugLevel level) { g_debug.store(static_cast<int>(level)); }
DebugLevel debug_level() {
  return static_cast<DebugLevel>(g_debug.load(std::memory_order_relaxed));
}
void set_log_rank(int rank) { g_rank.store(rank); }

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed) &&
         level != LogLevel::Off;
}

void log_line(LogLevel level, std::string_view msg) {
  const int rank = g_rank.load();
  std::string line = rank >= 0
                         ? fmt::format("[Rank {}] {} collie: {}\n", rank, level_tag(level), msg)
                         : fmt::format("{} collie: {}\n", level_tag(level), msg);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace collie
