#pragma once
#include <chrono>

namespace collie {

using Millis = std::chrono::milliseconds;
// Sentinel in per-op options and Work::wait: "use the group's (or the op's) own timeout".
inline constexpr Millis kUseGroupTimeout{-1};
// Default group / store timeout when neither the caller nor COLLIE_TIMEOUT_MS sets one.
inline constexpr Millis kDefaultTimeout{std::chrono::minutes(5)};

}  // namespace collie
