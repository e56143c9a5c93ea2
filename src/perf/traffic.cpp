// TrafficModel: the bytes each rank sends each rank for one spec (traffic.h), and the per-rank
// summary lines nccl-tests prints with NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY.
#include "perf/traffic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace collie::perf {
namespace {

// splitmix64: the generators' one source of randomness, the same on every machine.
uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Stream {
 public:
  Stream(uint64_t seed, uint64_t which) : state_(finalize(seed) ^ finalize(which + 1)) {}
  uint64_t next() { return finalize(state_ += 0x9e3779b97f4a7c15ULL); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

constexpr uint64_t kPermutationStream = ~uint64_t{0};  // the popularity order's stream

// Each rank's probability of receiving a token, in rank order.
std::vector<double> popularity(const TrafficSpec& s, int n) {
  std::vector<double> p(n, 1.0 / n);
  if (s.kind == TrafficKind::Uniform) return p;
  // order[k]: the rank that is k-th most popular (zipf), or hot when k < K (hot).
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  Stream perm(s.seed, kPermutationStream);
  for (int k = n - 1; k > 0; --k) std::swap(order[k], order[perm.next() % (k + 1)]);
  if (s.kind == TrafficKind::Zipf) {
    double sum = 0;
    for (int k = 0; k < n; ++k) sum += std::pow(k + 1.0, -s.zipf_s);
    for (int k = 0; k < n; ++k) p[order[k]] = std::pow(k + 1.0, -s.zipf_s) / sum;
  } else if (s.hot_ranks < n) {  // Hot; K == n is uniform
    const int k_hot = s.hot_ranks;
    for (int k = 0; k < n; ++k)
      p[order[k]] = k < k_hot ? s.hot_share / k_hot : (1 - s.hot_share) / (n - k_hot);
  }
  return p;
}

int64_t align_down(int64_t bytes) { return bytes & ~(kTrafficAlign - 1); }

}  // namespace

int64_t RankTraffic::send_total() const {
  return std::accumulate(send_splits.begin(), send_splits.end(), int64_t{0});
}

int64_t RankTraffic::recv_total() const {
  return std::accumulate(recv_splits.begin(), recv_splits.end(), int64_t{0});
}

TrafficModel::TrafficModel(TrafficSpec spec, int n) : spec_(std::move(spec)), n_(n) {
  if (n < 1 || n > kMaxMatrixDim)
    throw InvalidArgument(
        fmt::format("alltoallv traffic for {} ranks: at most {}", n, kMaxMatrixDim));
  if (spec_.kind == TrafficKind::Matrix && spec_.matrix_dim < n)
    throw InvalidArgument(fmt::format("traffic matrix {} is {}x{}: too small for {} ranks",
                                      spec_.matrix_path, spec_.matrix_dim, spec_.matrix_dim, n));
  if (spec_.kind == TrafficKind::Hot && spec_.hot_ranks > n)
    throw InvalidArgument(
        fmt::format("--traffic hot:{} names more hot ranks than the {} ranks", spec_.hot_ranks, n));
  if (spec_.kind == TrafficKind::Spread || spec_.kind == TrafficKind::Matrix) return;
  // Multinomial draws: each of a rank's tokens goes to the rank its uniform number falls on in
  // the cumulative popularity.
  const std::vector<double> p = popularity(spec_, n);
  std::vector<double> cdf(n);
  std::partial_sum(p.begin(), p.end(), cdf.begin());
  tokens_.assign(static_cast<size_t>(n) * n, 0);
  for (int i = 0; i < n; ++i) {
    Stream draws(spec_.seed, static_cast<uint64_t>(i));
    uint16_t* row = tokens_.data() + static_cast<size_t>(i) * n;
    for (int t = 0; t < kTrafficTokens; ++t) {
      const double u = draws.unit() * cdf.back();
      const auto at = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
      ++row[std::min<ptrdiff_t>(at, n - 1)];
    }
  }
}

int64_t TrafficModel::bytes(int i, int j, int64_t total) const {
  const int n = n_;
  switch (spec_.kind) {
    case TrafficKind::Matrix:
      return spec_.matrix_bytes[static_cast<size_t>(i) * spec_.matrix_dim + j];
    case TrafficKind::Spread: {
      // nccl-tests' formula, in its order of operations (so the bytes match its to the byte).
      if (n == 1) return align_down(total);
      const int distance = (j - i + n) % n;
      const double pairs = static_cast<double>(static_cast<int64_t>(n) * (n - 1) / 2);
      const double uniform = static_cast<double>(total) / static_cast<double>(n);
      const double dist = static_cast<double>(distance) * static_cast<double>(total) / pairs;
      const double b = (1.0 - spec_.spread) * uniform + spec_.spread * dist;
      return align_down(static_cast<int64_t>(b));
    }
    default: {
      const auto t = tokens_[static_cast<size_t>(i) * n + j];
      return align_down(static_cast<int64_t>(static_cast<__int128>(total) * t / kTrafficTokens));
    }
  }
}

int64_t TrafficModel::max_rank_bytes(int64_t total) const {
  int64_t most = 0;
  for (int r = 0; r < n_; ++r) {
    int64_t out = 0, in = 0;
    for (int k = 0; k < n_; ++k) {
      out += bytes(r, k, total);
      in += bytes(k, r, total);
    }
    most = std::max({most, out, in});
  }
  return most;
}

std::shared_ptr<const RankTraffic> TrafficModel::for_rank(int rank, int64_t total, DType d) const {
  const int64_t ts = static_cast<int64_t>(dtype_size(d));
  if (kTrafficAlign % ts != 0)
    throw InvalidArgument(
        fmt::format("alltoallv: {}-byte elements do not divide {} bytes", ts, kTrafficAlign));
  auto t = std::make_shared<RankTraffic>();
  const int n = n_;
  t->n = n;
  t->rank = rank;
  t->total = spec_.fixed_bytes() ? 0 : total;
  t->send_splits.resize(n);
  t->recv_splits.resize(n);
  t->recv_offsets.resize(n);
  t->send_bytes.assign(n, 0);
  t->recv_bytes.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    int64_t before_me = 0;  // what i sends to ranks below `rank`, elements
    for (int j = 0; j < n; ++j) {
      const int64_t b = bytes(i, j, total);
      t->send_bytes[i] += b;
      t->recv_bytes[j] += b;
      if (j < rank) before_me += b / ts;
      if (i == rank) t->send_splits[j] = b / ts;
      if (j == rank) t->recv_splits[i] = b / ts;
    }
    t->recv_offsets[i] = before_me;
  }
  t->max_send = *std::max_element(t->send_bytes.begin(), t->send_bytes.end()) / ts;
  t->max_recv = *std::max_element(t->recv_bytes.begin(), t->recv_bytes.end()) / ts;
  return t;
}

std::vector<std::string> traffic_summary_lines(const TrafficSpec& s, const RankTraffic& t,
                                               int64_t total, double time_us) {
  std::vector<std::string> out;
  const double sec = time_us / 1e6;
  const int n = t.n;
  switch (s.kind) {
    case TrafficKind::Spread:
      out.push_back(fmt::format(
          "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=generated nranks={} total_bytes={} "
          "spread={:.3f} time_usec={:.2f}",
          n, total, s.spread, time_us));
      break;
    case TrafficKind::Matrix:
      out.push_back(fmt::format(
          "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=matrix nranks={} matrix_dim={} scale={:.3f} "
          "time_usec={:.2f}",
          n, s.matrix_dim, s.matrix_scale, time_us));
      break;
    default:
      out.push_back(fmt::format(
          "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=collie traffic={} seed={} nranks={} "
          "total_bytes={} time_usec={:.2f}",
          s.word(), s.seed, n, total, time_us));
  }
  const double factor = n > 0 ? static_cast<double>(n - 1) / n : 0;
  for (int r = 0; r < n; ++r) {
    const double alg =
        sec > 0 ? static_cast<double>(std::max(t.send_bytes[r], t.recv_bytes[r])) / 1e9 / sec : 0;
    out.push_back(fmt::format("#   rank={} send_bytes={} recv_bytes={} alg_bw={:.2f} bus_bw={:.2f}",
                              r, t.send_bytes[r], t.recv_bytes[r], alg, alg * factor));
  }
  return out;
}

}  // namespace collie::perf
