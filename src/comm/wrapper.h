#pragma once
// ProcessGroupWrapper: the one forwarding base for decorators (desync checks, tracing). The
// forwarding is written once here, so a wrapper sees every op, including ones added later:
// run() = before(call); work = inner.run(call); after(call, work).
// Ownership: shares ownership of the inner group. Thread safety: as ProcessGroup.
#include <memory>

#include "comm/process_group.h"
#include "core/export.h"

namespace collie {

class COLLIE_API ProcessGroupWrapper : public ProcessGroup {
 public:
  explicit ProcessGroupWrapper(std::shared_ptr<ProcessGroup> inner);

  const Capabilities& capabilities() const override { return inner_->capabilities(); }
  void shutdown() override { inner_->shutdown(); }
  ProcessGroup* inner() const override { return inner_.get(); }
  device::DeviceRuntime& device_runtime() override { return inner_->device_runtime(); }

 protected:
  std::shared_ptr<Work> run(const OpCall& call) final;
  // Called before forwarding; may throw to stop the op (nothing is sent then).
  virtual void before(const OpCall& call) { (void)call; }
  // Called with the inner Work; returns the Work handed to the caller.
  virtual std::shared_ptr<Work> after(const OpCall& call, std::shared_ptr<Work> work) {
    (void)call;
    return work;
  }
  // Called instead of after() when the inner run() throws; the exception is rethrown after.
  virtual void failed(const OpCall& call, std::exception_ptr error) {
    (void)call;
    (void)error;
  }
  ProcessGroup& inner_group() const { return *inner_; }

 private:
  std::shared_ptr<ProcessGroup> inner_;
};

// The innermost (backend) group under any number of wrappers.
COLLIE_API ProcessGroup& backend_of(ProcessGroup& pg);

}  // namespace collie
