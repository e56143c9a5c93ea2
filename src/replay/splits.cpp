#include "replay/splits.h"

#include <algorithm>
#include <numeric>

namespace collie::replay {

std::optional<std::vector<std::vector<int64_t>>> splits_for_totals(
    const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  const size_t n = in.size();
  if (out.size() != n) return std::nullopt;
  if (std::any_of(in.begin(), in.end(), [](int64_t v) { return v < 0; }) ||
      std::any_of(out.begin(), out.end(), [](int64_t v) { return v < 0; }))
    return std::nullopt;
  const int64_t total = std::accumulate(in.begin(), in.end(), int64_t{0});
  if (total != std::accumulate(out.begin(), out.end(), int64_t{0})) return std::nullopt;
  std::vector<std::vector<int64_t>> m(n, std::vector<int64_t>(n, 0));
  if (total == 0) return m;
  // Proportional cells, rounded down; then what each row still owes goes to the columns still
  // short, in order (the shortfalls add up to the same on both sides).
  std::vector<int64_t> row_left(in), col_left(out);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const auto v = static_cast<int64_t>(static_cast<__int128>(in[i]) * out[j] / total);
      m[i][j] = v;
      row_left[i] -= v;
      col_left[j] -= v;
    }
  }
  size_t j = 0;
  for (size_t i = 0; i < n; ++i) {
    while (row_left[i] > 0) {
      while (col_left[j] == 0) ++j;
      const int64_t give = std::min(row_left[i], col_left[j]);
      m[i][j] += give;
      row_left[i] -= give;
      col_left[j] -= give;
    }
  }
  return m;
}

}  // namespace collie::replay
