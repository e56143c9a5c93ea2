#include "perf/collective.h"

#include <algorithm>

namespace collie::perf {
namespace {

std::vector<CollectiveDescriptor>& registry() {
  static std::vector<CollectiveDescriptor> r;
  return r;
}

constexpr const char* kOrder[] = {"all_reduce",     "all_gather", "broadcast", "reduce",
                                  "reduce_scatter", "alltoall",   "alltoallv", "gather",
                                  "scatter",        "sendrecv",   "barrier"};

int rank_in_order(const std::string& name) {
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i)
    if (name == kOrder[i]) return i;
  return static_cast<int>(std::size(kOrder));
}

}  // namespace

bool register_collective(CollectiveDescriptor d) {
  registry().push_back(std::move(d));
  return true;
}

const CollectiveDescriptor* find_collective(const std::string& name) {
  for (const auto& d : registry())
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<const CollectiveDescriptor*> all_collectives() {
  std::vector<const CollectiveDescriptor*> out;
  for (const auto& d : registry()) out.push_back(&d);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return rank_in_order(a->name) < rank_in_order(b->name);
  });
  return out;
}

}  // namespace collie::perf
