#pragma once
// Native stacks of every thread of this process, symbolized (backward-cpp over libdw).
// Each thread is interrupted once with a real-time signal whose handler records its return
// addresses into a preallocated slot; symbolization happens afterwards on the calling thread.
// Safe for a rank in the middle of collectives: interrupted blocking calls restart (SA_RESTART);
// calls that return EINTR regardless (poll, epoll_wait, nanosleep, connect) are retried by their
// callers (Gloo's loop, the fan-out's HTTP client, the store client and server,
// std::this_thread::sleep_for);
// tests/debug_server/stacks_stress_test.cpp runs checked collectives and store calls under a
// constant stream of captures. A handler that runs after its request timed out cannot overwrite
// a later answer (each request carries a generation number).
// Thread safety: callers are serialized internally (one capture at a time).
#include <nlohmann/json.hpp>

namespace collie {

// [{tid, name, frames: ["#0 fn at file:line [object]", ...]} | {tid, name, error}]
nlohmann::json capture_all_stacks(int max_frames = 48);

}  // namespace collie
