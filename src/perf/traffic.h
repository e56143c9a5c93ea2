#pragma once
// Who sends how much to whom in `collie perf alltoallv`.
//
// nccl-tests' patterns (alltoallv_perf, 2.19), with their meaning and numbers:
//   spread:S  the distance-weighted pattern (NCCL_TESTS_ALLTOALLV_SPREAD, default 1): rank i
//             sends rank j (1-S) T/n + S d T/(n(n-1)/2) bytes, d = (j - i) mod n, for a sweep
//             size of T bytes per rank, each cut down to a multiple of 16 bytes.
//   matrix    an n x n byte matrix read from a file (NCCL_TESTS_ALLTOALLV_MATRIX_FILE, scaled by
//             NCCL_TESTS_ALLTOALLV_MATRIX_SCALE, each cell cut down to a multiple of 16 bytes):
//             the same bytes for every row of the table.
// collie's seeded generators model a mixture-of-experts dispatch: every rank routes
// kTrafficTokens tokens to ranks drawn from one popularity distribution shared by all ranks
// (multinomial draws from a splitmix64 stream of (seed, rank, token)), then sends rank j
// T x (its tokens routed to j) / kTrafficTokens bytes, cut down to a multiple of 16:
//   uniform   every rank equally popular (only the draws make it uneven);
//   zipf:S    the rank of popularity k (a seeded permutation) has weight 1/(k+1)^S;
//   hot:K[:F] K seeded ranks share F (default 0.5) of all tokens, the others the rest.
// The same spec and seed give the same bytes on every machine: describe() and repeat_flags()
// say how to get them again.
// Thread safety: TrafficModel is immutable after construction; its methods are const and pure.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace collie {
class Env;
}

namespace collie::perf {

inline constexpr int kTrafficTokens = 8192;   // tokens each rank routes (the generators)
inline constexpr int64_t kTrafficAlign = 16;  // nccl-tests' per-peer alignment in bytes
// The most bytes a matrix file may have, and the most ranks it may describe.
inline constexpr int64_t kMaxMatrixFileBytes = int64_t{64} << 20;
inline constexpr int kMaxMatrixDim = 4096;

enum class TrafficKind { Spread, Matrix, Uniform, Zipf, Hot };

struct TrafficSpec {
  TrafficKind kind = TrafficKind::Spread;
  double spread = 1.0;     // Spread
  double zipf_s = 1.0;     // Zipf
  int hot_ranks = 1;       // Hot: K
  double hot_share = 0.5;  // Hot: F
  uint64_t seed = 1;       // the generators
  // Matrix: where it came from, and its cells (matrix_dim^2, row-major, bytes already scaled and
  // cut to a multiple of 16).
  std::string matrix_path;
  double matrix_scale = 1.0;
  int matrix_dim = 0;
  std::vector<int64_t> matrix_bytes;
  // Where the spec came from when not --traffic ("NCCL_TESTS_ALLTOALLV_SPREAD", ...), for the
  // table's traffic line.
  std::string source;

  // Matrix traffic does not follow the sweep: one size, the matrix's.
  bool fixed_bytes() const { return kind == TrafficKind::Matrix; }
  // The --traffic word: "spread:1", "zipf:1.2", "hot:2:0.5", "file:PATH".
  std::string word() const;
  // "zipf:1.2 seed 7, 8192 tokens per rank": the table's traffic line.
  std::string describe() const;
  // The collie flags that give the same traffic again ("--traffic zipf:1.2 --traffic-seed 7").
  std::string repeat_flags() const;
  // Equal on two ranks exactly when their specs give the same bytes.
  uint64_t fingerprint() const;
};

// --traffic WORD (spread[:S], uniform, zipf:S, hot:K[:F], file:PATH). A file is read now
// (load_matrix) with `scale`. Throws InvalidArgument: one line naming --traffic.
TrafficSpec parse_traffic(const std::string& word, uint64_t seed, double scale);
// nccl-tests' variables: NCCL_TESTS_ALLTOALLV_MATRIX_FILE (read now, scaled by
// NCCL_TESTS_ALLTOALLV_MATRIX_SCALE) before NCCL_TESTS_ALLTOALLV_SPREAD; spread 1 when neither is
// set. Unlike nccl-tests, a value that is not a number in range is refused (one line naming the
// variable) rather than ignored or clamped. `scale`, when given (--traffic-scale), replaces
// NCCL_TESTS_ALLTOALLV_MATRIX_SCALE.
TrafficSpec traffic_from_env(const Env& env, std::optional<double> scale = std::nullopt);
// Reads s.matrix_path (nccl-tests' format: whitespace-separated non-negative numbers of bytes,
// one row per line, square) into s.matrix_bytes, scaled by s.matrix_scale and cut to multiples
// of 16. Throws InvalidArgument naming the file and the row/column at fault; files over
// kMaxMatrixFileBytes or kMaxMatrixDim rows are refused.
void load_matrix(TrafficSpec& s);

// One rank's share of one alltoallv, in elements of the row's dtype.
struct RankTraffic {
  int n = 0;
  int rank = 0;
  int64_t total = 0;                 // the sweep's bytes per rank (0 for a matrix)
  std::vector<int64_t> send_splits;  // elements this rank sends to each rank
  std::vector<int64_t> recv_splits;  // elements this rank receives from each rank
  // For each source s: where this rank's block starts in s's send buffer (elements).
  std::vector<int64_t> recv_offsets;
  // Every rank's send and receive totals in bytes (the per-rank summary).
  std::vector<int64_t> send_bytes, recv_bytes;
  int64_t max_send = 0, max_recv = 0;  // the busiest rank's totals, elements
  int64_t send_total() const;          // this rank's, elements
  int64_t recv_total() const;
};

// The traffic of one spec on n ranks. Construction draws the generators' tokens (O(n x
// kTrafficTokens) time, n^2 small counts of memory).
class TrafficModel {
 public:
  // REQUIRES: 1 <= n <= kMaxMatrixDim; a Matrix spec with matrix_dim >= n (else InvalidArgument).
  TrafficModel(TrafficSpec spec, int n);

  const TrafficSpec& spec() const { return spec_; }
  int ranks() const { return n_; }
  // Bytes rank i sends to rank j when every rank sends `total` bytes (ignored for a matrix).
  int64_t bytes(int i, int j, int64_t total) const;
  // The busiest rank's send or receive bytes, whichever is larger.
  int64_t max_rank_bytes(int64_t total) const;
  // `rank`'s splits for `total` bytes per rank in dtype `d` (whose size divides 16).
  std::shared_ptr<const RankTraffic> for_rank(int rank, int64_t total, DType d) const;

 private:
  TrafficSpec spec_;
  int n_;
  std::vector<uint16_t> tokens_;  // n x n: tokens rank i routes to rank j (generators)
};

// nccl-tests' NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY lines for one measured row: a header line and
// one line per rank (send/recv bytes, its algbw/busbw at the row's time). `time_us` > 0.
std::vector<std::string> traffic_summary_lines(const TrafficSpec& s, const RankTraffic& t,
                                               int64_t total, double time_us);

}  // namespace collie::perf
