#pragma once
// all_to_all splits from the ranks' totals: flight recorders keep each rank's input and output
// sizes but not what it sent to whom, so an uneven all_to_all is replayed with a matrix that
// gives every rank exactly its recorded totals, spread as evenly as they allow (each cell near
// in[i] x out[j] / total). Thread safety: pure function.
#include <cstdint>
#include <optional>
#include <vector>

namespace collie::replay {

// m[i][j]: elements rank i sends rank j, with row sums `in` and column sums `out`. nullopt when
// the totals cannot be met (sum(in) != sum(out), or a negative total).
std::optional<std::vector<std::vector<int64_t>>> splits_for_totals(const std::vector<int64_t>& in,
                                                                   const std::vector<int64_t>& out);

}  // namespace collie::replay
