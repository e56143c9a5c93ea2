// Feeds the process's OpObservers (metrics, live status) from every group, and registers the
// process-wide MetricsObserver. Interim home of the notify_* calls: once the TracingProcessGroup
// (src/metrics/tracing_process_group.*) calls notify_op_started/completed/failed itself, this
// wrapper is dropped and only the observer registration below stays.
#include <memory>

#include "comm/registry.h"
#include "comm/wrapper.h"
#include "metrics/metrics_observer.h"

namespace collie {
namespace {

class ObservingProcessGroup : public ProcessGroupWrapper {
 public:
  explicit ObservingProcessGroup(std::shared_ptr<ProcessGroup> inner)
      : ProcessGroupWrapper(std::move(inner)) {
    notify_group_created(info());
  }

 protected:
  void before(const OpCall& call) override {
    // One submitting thread per group (ProcessGroup's contract), so a member is enough.
    start_ = std::chrono::steady_clock::now();
    notify_op_started(info(), call);
  }

  std::shared_ptr<Work> after(const OpCall& call, std::shared_ptr<Work> work) override {
    const auto start = start_;
    // The OpCall is copied: the caller's may be gone when the op completes asynchronously.
    work->on_complete([this, call, start](Work& w) {
      const auto d = std::chrono::steady_clock::now() - start;
      if (w.is_success()) {
        notify_op_completed(info(), call, d);
      } else {
        notify_op_failed(info(), call, d, w.exception());
      }
    });
    return work;
  }

  void failed(const OpCall& call, std::exception_ptr error) override {
    notify_op_failed(info(), call, std::chrono::steady_clock::now() - start_, error);
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

MetricsObserver& process_observer() {
  static MetricsObserver* o = new MetricsObserver(Metrics::global(), LiveStatus::global());
  return *o;
}

const bool kRegistered = [] {
  add_op_observer(&process_observer());
  return register_wrapper(
      WrapperRegistration{"metrics", 10, [](std::shared_ptr<ProcessGroup> pg, const BackendArgs&) {
                            return std::shared_ptr<ProcessGroup>(
                                std::make_shared<ObservingProcessGroup>(std::move(pg)));
                          }});
}();

}  // namespace
}  // namespace collie
