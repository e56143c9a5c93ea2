#include "core/memory_budget.h"

#include <fmt/format.h>

#include "core/error.h"

namespace collie {

void MemoryBudget::charge(size_t bytes) {
  if (bytes > limit_ - used_) {
    throw InvalidArgument(fmt::format(
        "{} needs more than {} bytes of memory to read (a value repeated or nested far more "
        "than any real one is)",
        what_, reported_));
  }
  used_ += bytes;
}

}  // namespace collie
