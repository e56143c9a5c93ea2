#pragma once
// Shared pieces of the MPI backend tests: the world group, subgroups, deterministic per-rank
// inputs and host-side references (built with core/reduce_kernel.h, itself tested in tests/core).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/process_group.h"

namespace collie::test {

using Buffer = std::vector<std::byte>;

// The world group over MPI_COMM_WORLD, created on first use.
ProcessGroup& world();
void release_world();
// A subgroup of the given world ranks (group rank i = world_ranks[i]); nullptr on non-members.
std::shared_ptr<ProcessGroup> make_group(const std::vector<int>& world_ranks,
                                         const std::string& name);

// `count` elements of `d` holding small integers (1..3) that depend on `rank` and `salt`, so
// sums, products and averages are exact in every dtype for up to 4 ranks.
Buffer values(DType d, size_t count, int rank, int salt = 0);
// Arbitrary bytes for data movement, distinct per rank.
Buffer pattern(DType d, size_t count, int rank, int salt = 0);
// Elementwise reduction of values(d, count, r, salt) over ranks 0..n-1 with op (Avg divides,
// PreMulSum scales each input by `factor` first).
Buffer reduced(DType d, size_t count, int n, ReduceOp op, double factor, int salt = 0);

TensorView view(Buffer& b, DType d);

}  // namespace collie::test
