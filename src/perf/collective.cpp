#include "perf/collective.h"

namespace collie::perf {

// Each collective's descriptor, defined in its own file under collectives/.
CollectiveDescriptor all_reduce_collective();
CollectiveDescriptor all_gather_collective();
CollectiveDescriptor broadcast_collective();
CollectiveDescriptor reduce_collective();
CollectiveDescriptor reduce_scatter_collective();
CollectiveDescriptor alltoall_collective();
CollectiveDescriptor alltoallv_collective();
CollectiveDescriptor gather_collective();
CollectiveDescriptor scatter_collective();
CollectiveDescriptor sendrecv_collective();
CollectiveDescriptor barrier_collective();

namespace {

// Every collective `collie perf` runs, in the canonical order (help, `collie perf all`).
const std::vector<CollectiveDescriptor>& table() {
  static const std::vector<CollectiveDescriptor> t = {
      all_reduce_collective(), all_gather_collective(),     broadcast_collective(),
      reduce_collective(),     reduce_scatter_collective(), alltoall_collective(),
      alltoallv_collective(),  gather_collective(),         scatter_collective(),
      sendrecv_collective(),   barrier_collective()};
  return t;
}

}  // namespace

const CollectiveDescriptor* find_collective(const std::string& name) {
  for (const auto& d : table())
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<const CollectiveDescriptor*> all_collectives() {
  std::vector<const CollectiveDescriptor*> out;
  for (const auto& d : table()) out.push_back(&d);
  return out;
}

}  // namespace collie::perf
