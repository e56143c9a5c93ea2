#include "stack/membership.h"

#include <fmt/format.h>

#include <cstdint>

#include "core/error.h"
#include "store/store.h"

namespace collie {
namespace {

// "<n> ranks, fnv1a <16 hex digits>": equal for equal lists, and two different lists of one
// group size collide with probability 2^-64.
std::string membership_digest(const std::string& list, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : list) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{} ranks, fnv1a {:016x}", n, h);
}

// At most ~80 characters of a rank list, for one-line messages at any group size.
std::string quoted_prefix(const std::string& list) {
  if (list.size() <= 80) return list;
  return list.substr(0, 76) + ",...";
}

}  // namespace

void agree_on_members(Store& store, int parent_rank, int id, const std::vector<int>& ranks) {
  const std::string list = fmt::format("{}", fmt::join(ranks, ","));
  const Bytes mine = to_bytes(membership_digest(list, ranks.size()));
  const Bytes agreed = store.compare_set("members", Bytes{}, mine);
  if (agreed == mine) {
    if (store.add("members/recorded", 1) == 1) store.set("members/list", list);
    return;
  }
  std::string theirs = "a list that did not arrive";
  try {
    theirs = fmt::format("[{}]", quoted_prefix(store.get_string("members/list")));
  } catch (const Error&) {
  }
  throw InvalidArgument(fmt::format(
      "[Rank {}] new_group #{}: this rank asked for ranks [{}] but another member asked for {}; "
      "every rank must call new_group with the same ranks in the same order",
      parent_rank, id, quoted_prefix(list), theirs));
}

}  // namespace collie
