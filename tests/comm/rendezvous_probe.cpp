// Helper process for rendezvous_test: one rank of an env:// rendezvous started by the launcher.
// Usage: rendezvous_probe [FAIL_RANK]: that rank exits 3 before joining.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "comm/rendezvous.h"
#include "core/env.h"
#include "store/store.h"

int main(int argc, char** argv) {
  using namespace collie;
  const int fail_rank = argc > 1 ? std::atoi(argv[1]) : -1;
  try {
    const int rank = static_cast<int>(Env::process().get_int("RANK").value_or(-1));
    if (rank == fail_rank) return 3;
    Rendezvous rd =
        rendezvous(RendezvousRequest{"", -1, -1, std::chrono::seconds(20)}, Env::process());
    rd.store->set("pid/" + std::to_string(rd.rank), std::to_string(getpid()));
    store_barrier(*rd.store, "probe", rd.rank, rd.world_size, std::chrono::seconds(20));
    const int next = (rd.rank + 1) % rd.world_size;
    std::printf("rank %d of %d via %s sees rank %d\n", rd.rank, rd.world_size, rd.method.c_str(),
                next);
    std::fflush(stdout);
    // Rank 0 hosts the store, so it leaves last: after every other rank said goodbye.
    if (rd.rank != 0) {
      rd.store->set("left/" + std::to_string(rd.rank), "1");
    } else {
      std::vector<std::string> left;
      for (int r = 1; r < rd.world_size; ++r) left.push_back("left/" + std::to_string(r));
      rd.store->wait(left, std::chrono::seconds(20));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rendezvous_probe: %s\n", e.what());
    return 1;
  }
}
