#pragma once
// StopOnSignal: while alive, SIGINT and SIGTERM do not kill this process; they set a flag that
// the perf driver reads at every row boundary (all ranks exchange it with the row's results, so
// they all stop after the same row, with every completed row written). A second signal has the
// default effect (the handler is reset after the first), so a stuck run can still be killed.
// Interrupted blocking calls restart (SA_RESTART).
// Thread safety: one instance per process at a time (REQUIRES); flag() may be read from any
// thread.
#include <atomic>

namespace collie::perf {

class StopOnSignal {
 public:
  StopOnSignal();   // installs the handlers
  ~StopOnSignal();  // restores the previous handlers
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  // 0, or the number of the first signal received.
  const std::atomic<int>& flag() const;
};

}  // namespace collie::perf
