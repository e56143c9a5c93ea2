#include "core/input_budget.h"

#include <fmt/format.h>

#include "core/error.h"

namespace collie {

void InputBudget::charge(size_t amount) {
  if (amount > limit_ - used_) {
    throw InvalidArgument(
        fmt::format("{} needs more than {} {} to read (a value repeated or nested far more than "
                    "any real one is)",
                    what_, reported_, unit_));
  }
  used_ += amount;
}

}  // namespace collie
