#include "replay/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "comm/rendezvous.h"
#include "perf/collective.h"
#include "replay/schedule.h"
#include "reports/json_io.h"
#include "reports/table.h"

namespace collie::replay {
namespace {

std::string ranks_text(const std::vector<int>& r) { return format_ranks(r); }

std::string us(double v) { return fmt::format("{:.2f} us", v); }

// The table rows: calls of one kind, group size, size, dtype, op and root together.
void make_rows(const ReplayPlan& plan, ReplayResult& r) {
  using Key = std::tuple<std::string, int, int64_t, int64_t, DType, int, int>;
  std::map<Key, std::vector<size_t>> rows;
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall& c = plan.calls[i];
    const int n = static_cast<int>(plan.groups[c.group].replay_ranks.size());
    const bool reduces = has_reduce_op(c.type);
    rows[{c.kind, n, c.bytes, c.count, c.dtype, reduces ? static_cast<int>(c.reduce_op) : -1,
          has_root(c.type) ? c.root : -1}]
        .push_back(i);
  }
  for (const auto& [key, calls] : rows) {
    const auto& [kind, n, bytes, count, dtype, op, root] = key;
    reports::ResultRow row;
    row.collective = kind;
    row.placement = "out";
    row.size_bytes = bytes;
    row.count = count;
    row.dtype = std::string(nccl_tests_name(dtype));
    row.redop = op >= 0 ? std::string(reduce_op_name(static_cast<ReduceOp>(op))) : "none";
    row.root = root;
    row.wrong = -1;  // a replay does not check data
    double sum = 0;
    for (size_t i : calls) {
      sum += r.calls[i].replayed_us;
      row.samples_us.push_back(r.calls[i].replayed_us);
    }
    row.time_us = sum / static_cast<double>(calls.size());
    row.iter = reports::compute_iter_stats(row.samples_us);
    row.samples_us.clear();
    row.iters = static_cast<int>(calls.size()) * r.meta.iters;
    row.algbw_gbps = row.time_us > 0 ? static_cast<double>(bytes) / 1e3 / row.time_us : 0;
    const perf::CollectiveDescriptor* d = perf::find_collective(kind);
    row.busbw_gbps = d != nullptr && d->busbw_factor ? row.algbw_gbps * d->busbw_factor(n) : 0;
    r.rows.push_back(std::move(row));
    r.row_ranks.push_back(n);
  }
}

}  // namespace

ReplayResult summarize(const ReplayPlan& plan, const std::vector<RankTimes>& times,
                       ReplayMeta meta) {
  ReplayResult r;
  r.meta = std::move(meta);
  r.calls.resize(plan.calls.size());
  r.ranks.resize(plan.ranks.size());
  for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
    RankTotals& t = r.ranks[rank];
    r.op_us.push_back(times[rank].op_us);
    t.ops = plan.ranks[rank].size();
    t.pass_us = times[rank].pass_us;
    for (size_t i = 0; i < plan.ranks[rank].size(); ++i) {
      const PlanOp& op = plan.ranks[rank][i];
      const double v = times[rank].op_us[i];
      t.ops_us += v;
      CallTime& c = r.calls[op.call];
      if (c.slowest_rank < 0 || v > c.replayed_us) {
        c.replayed_us = v;
        c.slowest_rank = static_cast<int>(rank);
      }
      if (op.recorded_ms >= 0) {
        t.recorded_us += op.recorded_ms * 1e3;
        ++t.recorded_ops;
        c.recorded_us = std::max(c.recorded_us, op.recorded_ms * 1e3);
      }
    }
  }
  make_rows(plan, r);
  return r;
}

std::vector<size_t> largest_differences(const ReplayResult& r, size_t k) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < r.calls.size(); ++i)
    if (r.calls[i].recorded_us >= 0) idx.push_back(i);
  auto diff = [&](size_t i) { return std::abs(r.calls[i].replayed_us - r.calls[i].recorded_us); };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return diff(a) > diff(b); });
  if (idx.size() > k) idx.resize(k);
  return idx;
}

std::string to_text(const ReplayPlan& plan, const ReplayResult& r, const TextOptions& o) {
  std::string s = fmt::format(
      "# collie replay of {}: {} ranks playing the dumps' ranks {} (of {}), backend {}, {} "
      "warmup + {} timed passes\n",
      r.meta.dumps, plan.played.size(), ranks_text(plan.played), plan.dump_world, r.meta.backend,
      r.meta.warmup, r.meta.iters);
  for (const PlanGroup& g : plan.groups)
    s += fmt::format("# group {} '{}': dump ranks {} as replay ranks {}\n", g.pg_id, g.desc,
                     ranks_text(g.dump_ranks), ranks_text(g.replay_ranks));
  if (!plan.notes.empty()) {
    s += "# not replayed as recorded:\n";
    for (const std::string& n : plan.notes) s += "#   " + n + "\n";
  }
  s += "#\n# per rank (send/recv posted together overlap, so their times may sum past the pass):\n";
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankTotals& t = r.ranks[i];
    s += fmt::format("#   rank {} (dump rank {}): {} ops, {} per pass, {} summed over its ops", i,
                     plan.played[i], t.ops, us(t.pass_us), us(t.ops_us));
    s += t.recorded_ops > 0
             ? fmt::format("; recorded {} over {} ops\n", us(t.recorded_us), t.recorded_ops)
             : "; no recorded durations\n";
  }
  const std::vector<size_t> top = largest_differences(r, o.top);
  if (!top.empty()) {
    s += "#\n# calls whose time differs most from the recorded durations (slowest rank):\n";
    for (size_t i : top) {
      const CallTime& c = r.calls[i];
      const double ratio = c.recorded_us > 0 ? c.replayed_us / c.recorded_us : 0;
      s += fmt::format("#   {}: replayed {}, recorded {}, {:+.2f} us{}\n",
                       call_label(plan, plan.calls[i]), us(c.replayed_us), us(c.recorded_us),
                       c.replayed_us - c.recorded_us,
                       ratio > 0 ? fmt::format(" ({:.2f}x)", ratio) : "");
    }
  } else {
    s += "#\n# no call has a recorded duration to compare with\n";
  }
  if (o.per_op) {
    s += "#\n# every call (slowest rank):\n";
    for (size_t i = 0; i < plan.calls.size(); ++i) {
      const CallTime& c = r.calls[i];
      s += fmt::format("#   {}: replayed {} (rank {}){}\n", call_label(plan, plan.calls[i]),
                       us(c.replayed_us), c.slowest_rank,
                       c.recorded_us >= 0 ? ", recorded " + us(c.recorded_us) : "");
    }
  }
  // One nccl-tests table per op kind and group size.
  for (size_t i = 0; i < r.rows.size();) {
    size_t j = i;
    std::vector<reports::ResultRow> rows;
    while (j < r.rows.size() && r.rows[j].collective == r.rows[i].collective &&
           r.row_ranks[j] == r.row_ranks[i])
      rows.push_back(r.rows[j++]);
    const std::string& kind = r.rows[i].collective;
    s += fmt::format("#\n# Collective test starting: {}_perf\n", kind);
    s += fmt::format(
        "# replayed {} on groups of {} ranks: each row is the mean of its calls "
        "(slowest rank each), data not checked\n",
        kind, r.row_ranks[i]);
    s += reports::format_column_header();
    for (const reports::ResultRow& row : rows) s += reports::format_row(&row, nullptr) + "\n";
    const std::string trailer = reports::format_trailer(kind, reports::summarize(rows, 1));
    s += "# Out of bounds values : N/A (a replay does not check data)\n";
    s += trailer.substr(trailer.find('\n') + 1);
    i = j;
  }
  return s;
}

nlohmann::json to_json(const ReplayPlan& plan, const ReplayResult& r) {
  using nlohmann::json;
  json j;
  j["schema"] = "collie.replay.v1";
  j["version"] = r.meta.version;
  j["backend"] = r.meta.backend;
  j["dumps"] = r.meta.dumps;
  j["dump_world"] = plan.dump_world;
  j["played"] = plan.played;
  j["warmup"] = r.meta.warmup;
  j["iters"] = r.meta.iters;
  j["groups"] = json::array();
  for (const PlanGroup& g : plan.groups)
    j["groups"].push_back({{"pg_id", g.pg_id},
                           {"desc", g.desc},
                           {"dump_ranks", g.dump_ranks},
                           {"replay_ranks", g.replay_ranks}});
  j["notes"] = plan.notes;
  j["ranks"] = json::array();
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankTotals& t = r.ranks[i];
    j["ranks"].push_back({{"rank", i},
                          {"dump_rank", plan.played[i]},
                          {"ops", t.ops},
                          {"pass_us", t.pass_us},
                          {"ops_us", t.ops_us},
                          {"recorded_us", t.recorded_us},
                          {"recorded_ops", t.recorded_ops}});
  }
  std::vector<json> calls(plan.calls.size());
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall& c = plan.calls[i];
    const CallTime& t = r.calls[i];
    calls[i] = {{"index", i},
                {"group", plan.groups[c.group].pg_id},
                {"op", std::string(op_name(c.type == OpType::Send ? OpType::Send : c.type))},
                {"recorded_op", c.recorded},
                {"seq", c.seq},
                {"kind", c.kind},
                {"dtype", std::string(dtype_name(c.dtype))},
                {"count", c.count},
                {"bytes", c.bytes},
                {"root", c.root},
                {"reduce_op", has_reduce_op(c.type) ? json(std::string(reduce_op_name(c.reduce_op)))
                                                    : json(nullptr)},
                {"approximate", c.approximate},
                {"replayed_us", t.replayed_us},
                {"slowest_rank", t.slowest_rank},
                {"recorded_us", t.recorded_us >= 0 ? json(t.recorded_us) : json(nullptr)},
                {"ranks", json::array()}};
    if (c.type == OpType::Send) {
      calls[i]["op"] = "send/recv";
      calls[i]["src"] = plan.groups[c.group].dump_ranks[c.src];
      calls[i]["dst"] = plan.groups[c.group].dump_ranks[c.dst];
    }
  }
  for (size_t rank = 0; rank < plan.ranks.size(); ++rank) {
    for (size_t i = 0; i < plan.ranks[rank].size(); ++i) {
      const PlanOp& op = plan.ranks[rank][i];
      json p = {{"rank", rank},
                {"op", std::string(op_name(op.type))},
                {"entry", op.entry},
                {"replayed_us", r.op_us[rank][i]},
                {"in_count", op.in_count},
                {"out_count", op.out_count},
                {"recorded_ms", op.recorded_ms >= 0 ? json(op.recorded_ms) : json(nullptr)}};
      if (!op.input_splits.empty()) {
        p["input_splits"] = op.input_splits;
        p["output_splits"] = op.output_splits;
      }
      calls[op.call]["ranks"].push_back(std::move(p));
    }
  }
  j["calls"] = std::move(calls);
  j["largest_differences"] = largest_differences(r, r.calls.size());
  j["rows"] = json::array();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    json row = reports::to_json(r.rows[i]);
    row["group_size"] = r.row_ranks[i];
    j["rows"].push_back(std::move(row));
  }
  return j;
}

}  // namespace collie::replay
