#include "cli/rank_status.h"

#include <cstdio>
#include <exception>
#include <vector>

#include "core/exit_codes.h"
#include "probes/context.h"
#include "store/store.h"

namespace collie::cli {
namespace {
constexpr const char* kStatusKey = "exit/rank0_status";
std::string read_key(int rank) { return "exit/read/" + std::to_string(rank); }
}  // namespace

int share_rank0_status(probes::ProbeContext& ctx, int rank0_status) {
  const auto deadline = ctx.timeout * 2;
  if (ctx.rank == 0) {
    try {
      ctx.store->set(kStatusKey, std::to_string(rank0_status));
      std::vector<std::string> keys;
      for (int r = 1; r < ctx.world; ++r) keys.push_back(read_key(r));
      if (!keys.empty()) ctx.store->wait(keys, deadline);
    } catch (const std::exception& e) {
      // A rank that never reads the status has its own status; rank 0's is still the verdict.
      std::fprintf(stderr, "collie: not every rank read the verdict: %s\n", e.what());
    }
    return rank0_status;
  }
  try {
    ctx.store->wait({kStatusKey}, deadline);
    const int status = std::stoi(ctx.store->get_string(kStatusKey));
    ctx.store->set(read_key(ctx.rank), "1");
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collie: rank %d could not learn rank 0's verdict (failed): %s\n",
                 ctx.rank, e.what());
    return kExitFailure;
  }
}

}  // namespace collie::cli
