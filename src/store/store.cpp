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

Store::GatherResult Store::gather(const std::string& name, int member, int members,
                                  const Bytes& value, GatherRead read, Millis timeout) {
  check_gather_args(name, member, members, value.size(), read);
  const Bytes n = to_bytes(std::to_string(members));
  const Bytes agreed = compare_set(name + "/members", Bytes{}, n);
  if (agreed != n) {
    throw InvalidArgument(fmt::format("gather '{}': member {} says {} members, another said {}",
                                      name, member, members, to_string(agreed)));
  }
  if (add(fmt::format("{}/claim/{}", name, member), 1) != 1) {
    throw InvalidArgument(fmt::format(
        "gather '{}': member {} contributed twice (each member calls once)", name, member));
  }
  auto key = [&](int m) { return fmt::format("{}/m/{}", name, m); };
  set(key(member), value);
  if (add(name + "/count", 1) == members) set(name + "/done", "1");
  GatherResult out;
  if (read == GatherRead::kRoot && member != 0) {
    out.complete = true;
    return out;
  }
  try {
    wait({name + "/done"}, timeout);
  } catch (const StoreError&) {
    if (!check({name + "/done"})) {
      for (int m = 0; m < members; ++m) {
        if (!check({key(m)})) out.missing.push_back(m);
      }
      if (!out.missing.empty()) return out;
    }
  }
  out.complete = true;
  if (read == GatherRead::kNone) return out;
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(members));
  for (int m = 0; m < members; ++m) keys.push_back(key(m));
  out.values = multi_get(keys);
  if (read == GatherRead::kColumn) out.values = column_of(out.values, member, name);
  return out;
}

std::vector<Bytes> column_of(const std::vector<Bytes>& values, int member,
                             const std::string& name) {
  const size_t n = values.size();
  std::vector<Bytes> cells;
  cells.reserve(n);
  for (const Bytes& v : values) {
    if (n == 0 || v.size() % n != 0 || v.size() != values[0].size()) {
      throw InvalidArgument(
          fmt::format("gather '{}' (column): values of {} and {} bytes are not {} equal cells each",
                      name, values[0].size(), v.size(), n));
    }
    const size_t cell = v.size() / n;
    const auto at = v.begin() + static_cast<std::ptrdiff_t>(cell * static_cast<size_t>(member));
    cells.emplace_back(at, at + static_cast<std::ptrdiff_t>(cell));
  }
  return cells;
}

void check_gather_args(const std::string& name, int member, int members, size_t value_bytes,
                       Store::GatherRead read) {
  if (members < 1 || member < 0 || member >= members) {
    throw InvalidArgument(fmt::format(
        "gather '{}': member {} of {} is out of range (members >= 1, 0 <= member < members)", name,
        member, members));
  }
  if (read == Store::GatherRead::kColumn && value_bytes % static_cast<size_t>(members) != 0) {
    throw InvalidArgument(
        fmt::format("gather '{}' (column): member {}'s value of {} bytes is not {} equal cells",
                    name, member, value_bytes, members));
  }
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
