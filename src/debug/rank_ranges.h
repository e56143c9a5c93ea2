#pragma once
// Sets of ranks as ranges, "0-3,5,7-9" (Slurm's notation inside brackets): how collie's JSON dumps
// list a group's ranks (one short string for every rank of a 100,000-rank job, where a list of
// numbers made each dump O(N) and a job's dumps O(N^2)) and how `collie analyze --json` names
// sets of ranks. Pure functions, thread-safe.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace collie {

// In the given order: runs of consecutive ascending ranks become lo-hi ("0-4095" for a sorted
// group of every rank); parse_rank_ranges gives the same list back.
std::string rank_ranges(const std::vector<int>& ranks);
// The ranks of `text` in its order. Untrusted input: throws InvalidArgument (one line, naming at
// most 40 characters of it) on anything but comma-separated ranks and lo-hi ranges with
// 0 <= lo <= hi < max_rank, or when it names more than max_count ranks.
std::vector<int> parse_rank_ranges(std::string_view text, int max_rank, size_t max_count);

}  // namespace collie
