#include "debug/rank_ranges.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"
#include "core/printable.h"

namespace collie {

std::string rank_ranges(const std::vector<int>& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j > i ? fmt::format("{}-{}", r[i], r[j]) : std::to_string(r[i]);
    i = j + 1;
  }
  return out;
}

std::vector<int> parse_rank_ranges(std::string_view text, int max_rank, size_t max_count) {
  auto bad = [&](std::string_view why) {
    const std::string shown = printable(text.substr(0, 40));
    return InvalidArgument(
        fmt::format("ranks '{}{}' {}", shown, text.size() > 40 ? "..." : "", why));
  };
  std::vector<int> out;
  if (text.empty()) return out;
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  auto number = [&]() {
    int v = -1;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || next == p || v < 0 || v >= max_rank)
      throw bad(
          fmt::format("is not a list of ranks in 0..{} and ranges such as 0-3", max_rank - 1));
    p = next;
    return v;
  };
  while (true) {
    const int lo = number();
    int hi = lo;
    if (p < end && *p == '-') {
      ++p;
      hi = number();
      if (hi < lo) throw bad("holds a range that ends below its start");
    }
    if (out.size() + static_cast<size_t>(hi - lo) + 1 > max_count)
      throw bad(fmt::format("names more than {} ranks", max_count));
    for (int r = lo; r <= hi; ++r) out.push_back(r);
    if (p == end) return out;
    if (*p != ',' || ++p == end)
      throw bad(
          fmt::format("is not a list of ranks in 0..{} and ranges such as 0-3", max_rank - 1));
  }
}

}  // namespace collie
