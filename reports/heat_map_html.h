#pragma once
// An HTML heat map of a sparse matrix by host, as `collie accept` reports carry it in a pairwise
// check's details: {"units": [label, ...], "<key>": [[row, column, value], ...]}. Up to
// kHtmlHeatMapFull units every cell is drawn (colored from the worst value, red, to the best,
// green; grey = not measured, each cell's title says which pair and its value); beyond, the
// kHtmlHeatMapWorst worst units by their median link (both directions) with that median, the
// number of links and the worst link, then how many units fall how far from the median unit, so
// a page for thousands of hosts stays readable. Pure; thread-safe.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace collie::reports {

inline constexpr int kHtmlHeatMapFull = 64;
inline constexpr int kHtmlHeatMapWorst = 32;

// A measured cell of a sparse matrix: row -> column.
struct MatrixCell {
  int row = 0, col = 0;
  double value = 0;
};

// The rows of a sparse matrix scored for a "worst rows" view (this page's and the probes' text
// heat map, probes/link_matrix.h): each row by the median of its links in both directions.
struct RowScore {
  int row = 0;
  size_t links = 0;
  double median = 0;
  double worst = 0;     // its worst link ...
  int worst_peer = -1;  // ... and the row at the other end
};
struct RowSummary {
  std::vector<RowScore> rows;  // every row with a measured link, the worst median first
  double lo = 0, hi = 0;       // the lowest and highest median
  double reference = 0;        // the median row's median
  // Rows by their median against the reference: within 10 %, 10-25 %, 25-50 % and more than
  // 50 % worse.
  int spread[4] = {0, 0, 0, 0};
};
RowSummary summarize_rows(const std::vector<MatrixCell>& cells, bool higher_is_better);

// "" when the matrix has no cell for `key`. `unit` labels the values ("GB/s").
std::string heat_map_html(const nlohmann::json& matrix, const std::string& key,
                          const std::string& title, const std::string& unit, bool higher_is_better);

}  // namespace collie::reports
