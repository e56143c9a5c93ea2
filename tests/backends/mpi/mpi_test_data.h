#pragma once
// The MPI tests' groups: the world group over MPI_COMM_WORLD and subgroups of it.
#include <memory>
#include <string>
#include <vector>

#include "comm/process_group.h"

namespace collie::test {

// The world group over MPI_COMM_WORLD, created on first use.
ProcessGroup& world();
void release_world();
// True when COLLIE_TEST_MPI_INIT=collie: the backend initializes MPI, not the test's main.
bool mpi_initialized_by_collie();
// A subgroup of the given world ranks (group rank i = world_ranks[i]); nullptr on non-members.
// With a store, members first meet in a store barrier (the path new_group takes).
std::shared_ptr<ProcessGroup> make_group(const std::vector<int>& world_ranks,
                                         const std::string& name,
                                         std::shared_ptr<Store> store = nullptr);

}  // namespace collie::test
