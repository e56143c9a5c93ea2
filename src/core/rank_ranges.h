#pragma once
// Sets of ranks and hosts written the way people read them at any N: "ranks 4100-4131 on hosts
// node[517-520]; the other 16,352", never one line per rank. Used by the live status summary
// (debug_server/live_summary.h) and free for any verdict that names ranks.
// Value types and pure functions; thread-safe to read, not to mutate concurrently.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace collie {

// A set of non-negative ranks held as sorted, disjoint, non-adjacent ranges [first, last].
// count() is always exact. The listing is capped at max_ranges() ranges (the lowest ranks are
// kept): past it, truncated() is true and ranges() lists only some of the ranks, so a hostile or
// scattered set costs O(cap) memory however large it is.
class RankRanges {
 public:
  static constexpr size_t kDefaultMaxRanges = 1024;
  using Range = std::pair<int, int>;  // first, last (inclusive)

  RankRanges() = default;
  explicit RankRanges(size_t max_ranges) : max_ranges_(max_ranges == 0 ? 1 : max_ranges) {}
  static RankRanges of(int first, int last);  // [first, last]; empty when last < first

  // Adds [first, last] (REQUIRES: 0 <= first). Overlaps with the set are counted once; once
  // the listing is truncated, count() assumes what is added is new (the sets a summary merges
  // come from disjoint parts of the world).
  void add(int first, int last);
  void add(int rank) { add(rank, rank); }
  // Adds every rank of `o`, as add().
  void merge(const RankRanges& o);

  int64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  bool truncated() const { return truncated_; }
  const std::vector<Range>& ranges() const { return ranges_; }
  size_t max_ranges() const { return max_ranges_; }
  // Whether `rank` is listed (a truncated set may hold ranks it does not list).
  bool lists(int rank) const;
  // The first `n` listed ranks (n or fewer), ascending.
  std::vector<int> first_ranks(size_t n) const;

  // "4100-4131", "0-3, 7, 9-12", at most `max_shown` ranges, then ", ... (N more ranks)".
  std::string str(size_t max_shown = 8) const;
  // Restores a set from its parts (a wire format), checking them: ranges sorted, disjoint,
  // non-adjacent, within [lo, hi), count >= the ranks listed and (not truncated) equal to them.
  // Returns false, with *why set, when they are not.
  static bool from_parts(const std::vector<Range>& ranges, int64_t count, bool truncated, int lo,
                         int hi, RankRanges* out, std::string* why);

 private:
  void cap();
  std::vector<Range> ranges_;
  int64_t count_ = 0;
  bool truncated_ = false;
  size_t max_ranges_ = kDefaultMaxRanges;
};

// "16,352": thousands separated by commas.
std::string with_commas(int64_t n);

// Host names compressed as a Slurm hostlist ("node[517-520],gpu-a[1-2]-ib,login"): names that
// differ only in their last run of digits share a bracket; a run with leading zeros keeps its
// width ("n[08-10]"); discovery/hostlist.h's expand_hostlist reads the result back as the same
// set. Duplicates are dropped; order is by prefix, then number. At most `max_chars` characters
// of expression (whole items only), then ",... (N more hosts)".
std::string compress_hosts(std::vector<std::string> hosts, size_t max_chars = 200);

}  // namespace collie
