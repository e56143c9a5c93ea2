#include "perf/combine.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace collie::perf {

std::vector<double> pack_local(const LocalResult& r, int stop_flag, bool waits) {
  std::vector<double> v = {r.avg_us, static_cast<double>(r.wrong),
                           static_cast<double>(r.first_wrong), static_cast<double>(stop_flag)};
  v.insert(v.end(), r.iter_us.begin(), r.iter_us.end());
  if (waits) {
    for (size_t i = 0; i < r.iter_us.size(); ++i)
      v.push_back(i < r.wait_us.size() ? r.wait_us[i] : std::nan(""));
    v.push_back(r.cpu_wait);
  }
  return v;
}

namespace {

// Every rank's waits past the skipped iterations; none at all when a rank has none (NaN).
std::vector<std::vector<double>> rank_waits(const std::vector<double>& all, int world,
                                            size_t stride, int iters, int skip) {
  std::vector<std::vector<double>> w(world);
  for (int k = 0; k < world; ++k) {
    const double* p = all.data() + k * stride + kPackedIterAt + iters;
    for (int it = skip; it < iters; ++it) {
      if (std::isnan(p[it])) return {};
      w[k].push_back(p[it]);
    }
  }
  return w;
}

}  // namespace

RowTotals combine_totals(const std::vector<double>& all, int world) {
  const size_t stride = all.size() / static_cast<size_t>(world);
  RowTotals t;
  for (int k = 0; k < world; ++k) {
    const double* p = all.data() + k * stride;
    t.stop = std::max(t.stop, static_cast<int>(p[kPackedStop]));
    const auto w = static_cast<int64_t>(p[kPackedWrong]);
    if (w >= 0) t.wrong = std::max<int64_t>(t.wrong, 0) + w;
  }
  return t;
}

Combined combine_ranks(const RowContext& ctx, const PerfOptions& o, const std::vector<double>& all,
                       int world) {
  const size_t stride =
      kPackedIterAt + static_cast<size_t>(ctx.iters) * (ctx.waits ? 2 : 1) + (ctx.waits ? 1 : 0);
  Combined c;
  static_cast<RowTotals&>(c) = combine_totals(all, world);
  reports::ResultRow& r = c.row;
  for (int k = 0; k < world; ++k) {
    const double* p = all.data() + k * stride;
    if (static_cast<int64_t>(p[kPackedWrong]) > 0 && r.wrong_rank < 0) {
      r.wrong_rank = k;
      r.wrong_offset = static_cast<int64_t>(p[kPackedFirstWrong]);
    }
  }
  const CollectiveDescriptor& d = *ctx.desc;
  const Layout& l = ctx.layout;
  const size_t ts = dtype_size(ctx.dtype);
  r.collective = d.name;
  r.placement = ctx.in_place ? "in" : "out";
  r.size_bytes = static_cast<int64_t>(std::max(l.send_count, l.recv_count) * ts);
  r.count = static_cast<int64_t>(l.count);
  r.dtype = std::string(nccl_tests_name(ctx.dtype));
  r.redop = d.reduces ? std::string(reduce_op_name(ctx.op)) : "none";
  r.root = ctx.root;
  r.wrong = c.wrong;
  r.iters = ctx.iters;
  r.agg_iters = o.agg_iters;
  r.cycle = ctx.cycle;
  double sum = 0, mn = 0, mx = 0;
  for (int k = 0; k < world; ++k) {
    const double t = all[k * stride + kPackedAvg];
    r.rank_time_us.push_back(t);
    sum += t;
    mn = k == 0 ? t : std::min(mn, t);
    if (k == 0 || t > mx) {
      mx = t;
      r.slowest_rank = k;
    }
  }
  switch (o.average) {
    case TimeReduce::Rank0:
      r.time_us = all[kPackedAvg];
      break;
    case TimeReduce::Avg:
      r.time_us = sum / world;
      break;
    case TimeReduce::Min:
      r.time_us = mn;
      break;
    case TimeReduce::Max:
      r.time_us = mx;
      break;
  }
  // Per iteration, the slowest rank's time: what the application would have waited.
  std::vector<double> per_iter;
  for (int it = o.iter_skip; it < ctx.iters; ++it) {
    double m = 0;
    for (int k = 0; k < world; ++k) m = std::max(m, all[k * stride + kPackedIterAt + it]);
    per_iter.push_back(m);
  }
  r.iter = reports::compute_iter_stats(per_iter);
  if (o.report_iters) {
    r.samples_us = std::move(per_iter);
    r.iter_skip = o.iter_skip;
    r.rank_samples_us.resize(world);
    for (int k = 0; k < world; ++k)
      for (int it = o.iter_skip; it < ctx.iters; ++it)
        r.rank_samples_us[k].push_back(all[k * stride + kPackedIterAt + it]);
  }
  if (ctx.waits && world > 1) {
    r.rank_wait_us = rank_waits(all, world, stride, ctx.iters, o.iter_skip);
    if (!r.rank_wait_us.empty()) r.arrival = reports::analyze_arrivals(r.rank_wait_us);
    for (int k = 0; k < world; ++k) {
      const double w = all[k * stride + kPackedIterAt + 2 * static_cast<size_t>(ctx.iters)];
      if (std::isnan(w) || w < 0) {
        r.rank_cpu_wait.clear();
        break;
      }
      r.rank_cpu_wait.push_back(w);
    }
  }
  const double algbytes = l.algbw_count > 0
                              ? static_cast<double>(l.algbw_count * ts)
                              : static_cast<double>(l.count * ts) * d.algbw_ranks_factor(world);
  r.algbw_gbps = r.time_us > 0 ? algbytes / 1e3 / r.time_us : 0;
  r.busbw_gbps = r.algbw_gbps * d.busbw_factor(world);
  return c;
}

}  // namespace collie::perf
