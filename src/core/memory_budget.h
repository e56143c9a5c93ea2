#pragma once
// A reader's memory allowance for one untrusted input: the reader charges every allocation it
// makes for the input as it makes it (never refunded, so the total charged bounds the peak),
// and the charge that would pass the limit throws instead. This is how a reader states and keeps
// "at most N bytes of memory per byte of input" whatever the input's shape.
// Not thread-safe; one per input.
#include <cstddef>
#include <string>

namespace collie {

class MemoryBudget {
 public:
  // `what` names the input in the error: "dump /path/nccl_trace_rank_3".
  MemoryBudget(size_t limit, std::string what) : limit_(limit), what_(std::move(what)) {}
  // Throws InvalidArgument "<what> needs more than <limit> bytes of memory to read (...)".
  void charge(size_t bytes);
  size_t used() const { return used_; }
  size_t limit() const { return limit_; }
  // A budget of what this one has left, for memory that is dropped again (one item's scratch
  // copies): charging it leaves this one as it is. Its error names this budget's limit.
  MemoryBudget scratch() const {
    MemoryBudget b(limit_ - used_, what_);
    b.reported_ = reported_;
    return b;
  }

 private:
  size_t limit_;
  size_t used_ = 0;
  std::string what_;
  size_t reported_ = limit_;  // the whole allowance, for the error
};

}  // namespace collie
