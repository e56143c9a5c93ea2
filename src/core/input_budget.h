#pragma once
// A reader's allowance for one untrusted input, in bytes of memory or in steps of work: the
// reader charges every allocation it makes for the input (or every value it visits) as it goes,
// never refunded, so the total charged bounds the peak; the charge that would pass the limit
// throws instead. This is how a reader states and keeps "at most N bytes of memory (or N steps)
// per byte of input" whatever the input's shape.
// Not thread-safe; one per input.
#include <cstddef>
#include <string>

namespace collie {

class InputBudget {
 public:
  // `what` names the input in the error ("dump /path/nccl_trace_rank_3"), `unit` what is counted.
  InputBudget(size_t limit, std::string what, std::string unit = "bytes of memory")
      : limit_(limit), what_(std::move(what)), unit_(std::move(unit)) {}
  // Throws InvalidArgument "<what> needs more than <limit> <unit> to read (...)".
  void charge(size_t amount);
  size_t used() const { return used_; }
  size_t limit() const { return limit_; }
  // A budget of what this one has left, for what is dropped again (one item's scratch copies):
  // charging it leaves this one as it is. Its error names this budget's whole limit.
  InputBudget scratch() const {
    InputBudget b(limit_ - used_, what_, unit_);
    b.reported_ = reported_;
    return b;
  }

 private:
  size_t limit_;
  size_t used_ = 0;
  std::string what_;
  std::string unit_;
  size_t reported_ = limit_;  // the whole allowance, for the error
};

}  // namespace collie
