#pragma once
#include <chrono>

namespace collie {

using Millis = std::chrono::milliseconds;
// Sentinel in per-op options and Work::wait: "use the group's (or the op's) own timeout".
inline constexpr Millis kUseGroupTimeout{-1};
// Default group / store timeout when neither the caller nor COLLIE_TIMEOUT sets one
// (init_process_group reads it with parse_duration: "30s", "500ms", "5m"; a bare number is
// seconds).
inline constexpr Millis kDefaultTimeout{std::chrono::minutes(5)};

}  // namespace collie
