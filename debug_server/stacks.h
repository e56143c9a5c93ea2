#pragma once
// Native stacks of every thread of this process, symbolized (backward-cpp over libdw).
// Each thread is interrupted once with a real-time signal whose handler records its return
// addresses into a preallocated slot; symbolization happens afterwards on the calling thread.
// Interrupted blocking calls restart (SA_RESTART); calls that return EINTR regardless (poll,
// epoll_wait, nanosleep) must retry, as Gloo, libuv and the store do.
// Thread safety: callers are serialized internally (one capture at a time).
#include <nlohmann/json.hpp>

namespace collie {

// [{tid, name, frames: ["#0 fn at file:line [object]", ...]} | {tid, name, error}]
nlohmann::json capture_all_stacks(int max_frames = 48);

}  // namespace collie
