#pragma once
// ProcessGroupGloo: the Gloo (TCP transport) backend for CPU tensors.
//
// Execution: collectives run inline on the submitting thread (the Work is complete when run()
// returns) unless OpCall.async_op, which runs them on the group's worker thread in submission
// order; an inline op first waits for queued async ops so every rank sees the same order.
// send/recv are posted on the submitting thread and completed by a pool of waiter threads (one
// per op in flight), so a Work never waits behind an unrelated one.
// Reductions are Gloo's algorithms with collie's host kernel (core/reduce_kernel.h) as the
// reduction function, so every dtype and reduce op is supported; avg = sum then divide,
// premul_sum = scale then sum (reduce: non-root buffers hold partial results afterwards, as in
// torch). reduce_scatter = Gloo all_to_all into a scratch buffer + reduction in rank order.
// Errors: a Gloo failure (timeout, lost peer) breaks the whole Gloo context; the failing Work gets
// TimeoutError/NetworkError/BackendError and later ops fail fast with BackendError.
// Thread safety: as ProcessGroup (one submitting thread at a time).
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/gloo/gloo_errors.h"
#include "backends/gloo/gloo_prepared.h"
#include "comm/process_group.h"
#include "core/worker_thread.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace collie {

class Env;
class P2PWaiterPool;
class UnboundBufferPool;
struct GlooOpArgs;

class ProcessGroupGloo : public ProcessGroup {
 public:
  // Connects a full mesh through info.store. Throws BackendError/NetworkError/TimeoutError
  // naming the rank when the device cannot be created or peers do not connect in info.timeout.
  ProcessGroupGloo(GroupInfo info, const Env& env);
  ~ProcessGroupGloo() override;

  const Capabilities& capabilities() const override;
  void shutdown() override;

  // Every op, every dtype, every reduce op, on CPU.
  static const Capabilities& declared_capabilities();

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override;

 private:
  struct Job {
    OpCall call;
    std::shared_ptr<Work> work;
  };
  // Runs a collective on this thread; throws collie errors.
  void execute(const OpCall& call);
  void run_p2p(const OpCall& call, const std::shared_ptr<Work>& work);
  void post_p2p(const OpCall& call, const std::shared_ptr<Work>& work);
  void worker_loop();
  GlooErrorContext error_context(const OpCall& call) const;
  void fail(const OpCall& call, Work& work, std::exception_ptr error);
  void check_usable(const OpCall& call) const;

  std::shared_ptr<gloo::Context> context_;
  std::vector<uint8_t> scratch_;  // reduce_scatter staging; only touched by the executing thread
  PreparedOps prepared_;          // libgloo options reused across calls; executing thread only

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::string broken_;  // first fatal error; non-empty = group unusable
  WorkerThread worker_;
  std::unique_ptr<UnboundBufferPool>
      buffers_;  // send/recv buffers; before waiters_ (outlives them)
  std::unique_ptr<P2PWaiterPool> waiters_;
};

}  // namespace collie
