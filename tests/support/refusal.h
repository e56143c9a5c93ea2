#pragma once
// refusal(f): the message of the InvalidArgument `f` throws, "" when it throws none (any other
// exception escapes). For tests of one-line refusals of bad input.
#include <string>

#include "core/error.h"

namespace collie::testing {

template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace collie::testing
