#include "store/store.h"

#include <fmt/format.h>

#include "core/error.h"

namespace collie {

Bytes to_bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }
std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

void throw_store_timeout(const std::vector<std::string>& keys, Millis waited,
                         std::string_view where) {
  throw StoreError(fmt::format(
      "{}: timed out after {} ms waiting for key(s) [{}]; a rank that should have set them may "
      "have died or not started (raise the timeout or check every rank is running)",
      where, waited.count(), fmt::join(keys, ", ")));
}

}  // namespace collie
