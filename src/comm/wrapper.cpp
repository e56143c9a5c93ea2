#include "comm/wrapper.h"

namespace collie {

ProcessGroupWrapper::ProcessGroupWrapper(std::shared_ptr<ProcessGroup> inner)
    : ProcessGroup(inner->info()), inner_(std::move(inner)) {}

std::shared_ptr<Work> ProcessGroupWrapper::run(const OpCall& call) {
  before(call);
  std::shared_ptr<Work> work;
  try {
    work = inner_->run(call);
  } catch (...) {
    failed(call, std::current_exception());
    throw;
  }
  return after(call, std::move(work));
}

ProcessGroup& backend_of(ProcessGroup& pg) {
  ProcessGroup* p = &pg;
  while (p->inner() != nullptr) p = p->inner();
  return *p;
}

}  // namespace collie
