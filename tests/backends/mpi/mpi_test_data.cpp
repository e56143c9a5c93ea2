#include "backends/mpi/mpi_test_data.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/registry.h"

namespace collie::test {
namespace {

std::shared_ptr<ProcessGroup> g_world;

}  // namespace

ProcessGroup& world() {
  if (!g_world) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    GroupInfo info;
    info.backend = "mpi";
    info.rank = rank;
    info.size = size;
    info.timeout = Millis(20000);
    g_world = find_backend("mpi")->create(BackendArgs{info, nullptr});
  }
  return *g_world;
}

void release_world() { g_world.reset(); }

bool mpi_initialized_by_collie() {
  const char* init = std::getenv("COLLIE_TEST_MPI_INIT");
  return init != nullptr && std::string(init) == "collie";
}

std::shared_ptr<ProcessGroup> make_group(const std::vector<int>& world_ranks,
                                         const std::string& name, std::shared_ptr<Store> store) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  for (size_t i = 0; i < world_ranks.size(); ++i) {
    if (world_ranks[i] != me) continue;
    GroupInfo info;
    info.backend = "mpi";
    info.name = name;
    info.desc = "test_" + name;
    info.rank = static_cast<int>(i);
    info.size = static_cast<int>(world_ranks.size());
    info.global_ranks = world_ranks;
    info.timeout = Millis(20000);
    info.store = std::move(store);
    return find_backend("mpi")->create(BackendArgs{info, nullptr});
  }
  return nullptr;
}

}  // namespace collie::test
