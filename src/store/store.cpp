#include "store/store.h"

#include <fmt/format.h>

#include "core/error.h"

namespace collie {

Bytes to_bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }
std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

std::vector<Bytes> Store::set_and_gather(const std::string& drop, const std::string& key,
                                         const Bytes& value, const std::vector<std::string>& gather,
                                         Millis timeout) {
  if (!drop.empty()) delete_key(drop);
  set(key, value);
  // multi_get waits up to timeout() itself.
  if (resolve(timeout) != this->timeout()) wait(gather, timeout);
  return multi_get(gather);
}

void throw_store_timeout(const std::vector<std::string>& keys, Millis waited,
                         std::string_view where) {
  throw StoreError(fmt::format(
      "{}: timed out after {} ms waiting for key(s) [{}]; a rank that should have set them may "
      "have died or not started (raise the timeout or check every rank is running)",
      where, waited.count(), fmt::join(keys, ", ")));
}

void throw_store_interrupted(const std::vector<std::string>& keys, std::string_view where) {
  throw StoreError(fmt::format("{}: interrupted{}{}{}", where, keys.empty() ? "" : " on key(s) [",
                               fmt::join(keys, ", "), keys.empty() ? "" : "]"));
}

}  // namespace collie
