#include "reports/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace collie::reports {

std::string format_float(double value, int width) {
  // Digits before the decimal point decide how many decimals still fit in `width`.
  int digits = 0;
  for (double v = 1; value >= v && digits < 40; v *= 10) ++digits;
  char buf[64];
  if (digits < width - 2) {
    std::snprintf(buf, sizeof buf, "%*.2f", width, value);
  } else if (digits < width - 1) {
    std::snprintf(buf, sizeof buf, "%*.1f", width, value);
  } else if (digits < width + 1) {
    std::snprintf(buf, sizeof buf, "%*.0f", width, value);
  } else if (width >= 7) {
    std::snprintf(buf, sizeof buf, "%*.1e", width, value);
  } else {
    std::snprintf(buf, sizeof buf, "%*.0e", width, value);
  }
  return buf;
}

// nccl-tests prints "  time  algbw  busbw  #wrong", with "    N/A" (one column narrower than
// "%6g") where it does not validate; a placement that was not run (--placement) prints N/A cells.
static std::string placement_cells(const ResultRow* r) {
  char buf[128];
  if (r == nullptr) {
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s    N/A", "N/A", "N/A", "N/A");
    return buf;
  }
  const std::string t = format_float(r->time_us, 7);
  const std::string a = format_float(r->algbw_gbps, 6);
  const std::string b = format_float(r->busbw_gbps, 6);
  if (r->wrong < 0) {
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), b.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6g", t.c_str(), a.c_str(), b.c_str(),
                  static_cast<double>(r->wrong));
  }
  return buf;
}

// nccl-tests -I: "  i_min  i_max  i_p99  i_cv%" after a placement's cells, over the
// per-iteration times (the slowest rank's, iteration by iteration).
static std::string per_iter_cells(const ResultRow* r) {
  char buf[64];
  if (r == nullptr) {
    std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %7s", "N/A", "N/A", "N/A", "N/A");
    return buf;
  }
  std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %7s", format_float(r->iter.min_us, 7).c_str(),
                format_float(r->iter.max_us, 7).c_str(), format_float(r->iter.p99_us, 7).c_str(),
                format_float(r->iter.cv * 100, 7).c_str());
  return buf;
}

std::string format_row(const ResultRow* out, const ResultRow* in, bool per_iter) {
  const ResultRow& k = out ? *out : *in;
  char root[32];
  std::snprintf(root, sizeof root, "%6i", k.root);
  char head[160];
  std::snprintf(head, sizeof head, "%12li  %12li  %8s  %6s  %6s", static_cast<long>(k.size_bytes),
                static_cast<long>(k.count), k.dtype.c_str(), k.redop.c_str(), root);
  if (per_iter)
    return head + placement_cells(out) + per_iter_cells(out) + placement_cells(in) +
           per_iter_cells(in);
  return head + placement_cells(out) + placement_cells(in);
}

std::string format_column_header(bool timestamps, bool per_iter) {
  // nccl-tests pads an empty timestamp column with "%*s" of width 0, hence the trailing spaces.
  const int pad = timestamps ? 19 : 0;
  const char* ts_label = timestamps ? "timestamp" : "";
  const char* ts_format = timestamps ? "%Y-%m-%d %H:%M:%S" : "";
  char buf[3][512];
  if (per_iter) {
    std::snprintf(buf[0], sizeof buf[0],
                  "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)       "
                  "                         in-place (+ per-iteration)\n",
                  "", "", "", "", "");
    std::snprintf(buf[1], sizeof buf[1],
                  "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
                  "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
                  "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                  "i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min",
                  "i_max", "i_p99", "i_cv%", pad, ts_label);
    std::snprintf(buf[2], sizeof buf[2],
                  "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
                  "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
                  "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
                  "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", pad,
                  ts_format);
    return std::string(buf[0]) + buf[1] + buf[2];
  }
  std::snprintf(buf[0], sizeof buf[0],
                "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                "in-place          \n",
                "", "", "", "", "");
  std::snprintf(buf[1], sizeof buf[1],
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong", pad, ts_label);
  std::snprintf(buf[2], sizeof buf[2],
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "", pad, ts_format);
  return std::string(buf[0]) + buf[1] + buf[2];
}

std::string format_header(const TableHeader& h) {
  std::string s = fmt::format("# Collective test starting: {}_perf\n", h.collective);
  const std::string step = h.step_factor > 1 ? fmt::format("{}(factor)", h.step_factor)
                                             : fmt::format("{}(bytes)", h.step_bytes);
  s += fmt::format(
      "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} agg iters: "
      "{} validation: {} graph: {} unalign: 0\n",
      h.min_bytes, h.max_bytes, step, h.warmup_iters, h.iters, h.agg_iters, h.check_iters,
      h.graph_launches);
  if (!h.iters_note.empty()) s += "# " + h.iters_note + "\n";
  if (h.blocking)
    s += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  // nccl-tests says "CUDA event timing" here; collie times on the host and says so.
  if (h.per_iter) s += "# Per-Iteration Report: host timing; i_* uses max over process rows \n";
  s += "#\n# Using devices\n";
  for (int r = 0; r < h.world_size; ++r) {
    const std::string host = r < static_cast<int>(h.hosts.size()) ? h.hosts[r] : "?";
    const int pid = r < static_cast<int>(h.pids.size()) ? h.pids[r] : 0;
    RankDevice dev;
    dev.bus_id = h.device;
    if (r < static_cast<int>(h.devices.size())) dev = h.devices[r];
    char line[512];
    std::snprintf(line, sizeof line, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n",
                  r, 0, pid, host.c_str(), dev.index, dev.bus_id.c_str(), dev.model.c_str());
    s += line;
  }
  s += "#\n";
  return s + format_column_header(h.timestamps, h.per_iter);
}

std::string format_straggler_line(const std::vector<ResultRow>& rows, const Summary& s) {
  if (s.stragglers.empty()) return "";
  std::string ranks;
  double worst = 0;
  std::vector<double> medians;  // once per row, not once per row and straggler
  medians.reserve(rows.size());
  for (const auto& row : rows) medians.push_back(median(row.rank_time_us));
  for (int r : s.stragglers) {
    if (!ranks.empty()) ranks.append(", ");
    ranks.append(std::to_string(r));
    for (size_t i = 0; i < rows.size(); ++i) {
      if (r < 0 || static_cast<size_t>(r) >= rows[i].rank_time_us.size()) continue;
      if (medians[i] > 0) worst = std::max(worst, rows[i].rank_time_us[r] / medians[i] - 1);
    }
  }
  return fmt::format(
      "# Straggler: rank{} {} slower than the median rank by > 20 % in most sizes (worst +{:.0f} "
      "%); "
      "check that host with `collie probe`\n",
      s.stragglers.size() > 1 ? "s" : "", ranks, worst * 100);
}

namespace {

// The rank that arrived last most often (the later one on a tie).
const RankArrival* most_often_last(const ArrivalStats& a) {
  const RankArrival* best = nullptr;
  for (const auto& r : a.ranks)
    if (!best || r.last_fraction > best->last_fraction ||
        (r.last_fraction == best->last_fraction && r.late_p50_us > best->late_p50_us))
      best = &r;
  return best;
}

std::string host_of(const std::vector<std::string>& hosts, int rank) {
  return rank >= 0 && rank < static_cast<int>(hosts.size()) ? hosts[rank] : "?";
}

}  // namespace

std::string format_arrival_lines(const std::vector<ResultRow>& rows,
                                 const std::vector<std::string>& hosts, int world_size) {
  if (world_size < 2) return "";
  std::string out;
  int measured = 0;
  for (const auto& r : rows) {
    const RankArrival* last = most_often_last(r.arrival);
    if (r.arrival.iters == 0 || last == nullptr) continue;
    if (measured++ == 0)
      out +=
          "# Arrival skew (-I): who arrived last, by how much, from each rank's wait inside the "
          "call (the last to arrive waits least); CPU wait: seconds a rank queued for a core per "
          "second of the loop\n"
          "#       size  place  iters  last rank (share)  late p50 (us)  late p95 (us)  skew p50 "
          "(us)  skew p95 (us)  cpu wait (rank)  others  late ranks\n";
    std::string named;
    for (const auto& x : late_ranks(r.arrival))
      named += fmt::format("{}{}", named.empty() ? "" : ",", x.rank);
    std::string cpu = fmt::format("{:>15}  {:>6}", "-", "-");
    if (r.rank_cpu_wait.size() > 1) {
      const auto top = std::max_element(r.rank_cpu_wait.begin(), r.rank_cpu_wait.end());
      std::vector<double> others(r.rank_cpu_wait.begin(), top);
      others.insert(others.end(), top + 1, r.rank_cpu_wait.end());
      cpu = fmt::format("{:>9.2f} ({:>3})  {:>6.2f}", *top, top - r.rank_cpu_wait.begin(),
                        median(others));
    }
    out += fmt::format(
        "# {:>10}  {:>5}  {:>5}  {:>9} ({:>3.0f} %)  {:>13}  {:>13}  {:>13}  {:>13}  {}  {}\n",
        r.size_bytes, r.placement, r.arrival.iters, last->rank, last->last_fraction * 100,
        format_float(last->late_p50_us, 13), format_float(last->late_p95_us, 13),
        format_float(r.arrival.skew_p50_us, 13), format_float(r.arrival.skew_p95_us, 13), cpu,
        named.empty() ? "-" : named);
  }
  if (measured == 0)
    return "# Arrival skew (-I): not measured: the runtime enqueues the timed loop without the "
           "host waiting for each iteration (CUDA), or no row ran\n";
  const std::vector<int> late = find_arrival_stragglers(rows);
  if (late.empty())
    out += fmt::format(
        "# Arrival: no rank kept the others waiting (none late by >= {:.0f} us and >= {:.0f}x "
        "the others in more than half of {} rows)\n",
        LateRule{}.late_us, LateRule{}.stand_out, measured);
  for (int rank : late) {
    std::vector<double> lates;
    for (const auto& r : rows)
      for (const auto& x : late_ranks(r.arrival))
        if (x.rank == rank) lates.push_back(x.late_p50_us);
    out += fmt::format(
        "# Straggler by arrival: rank {} ({}) arrived last, {:.0f} us after the first rank "
        "(median over its rows), in {} of {} rows; see what else runs on that host (top; "
        "taskset -p PID) or run `collie probe stragglers`\n",
        rank, host_of(hosts, rank), median(lates), lates.size(), measured);
  }
  int waits_rows = 0;
  const std::vector<double> waits = run_cpu_waits(rows, &waits_rows);
  for (int rank : find_cpu_stragglers(rows)) {
    std::vector<double> others(waits.begin(), waits.end());
    others.erase(others.begin() + rank);
    out += fmt::format(
        "# Straggler by CPU: rank {} ({}) queued for a core {:.2f} s per second of its timed "
        "loops, the others {:.2f} (means over {} rows, the others' median): something else keeps "
        "its core busy; see top and taskset -p PID on that host\n",
        rank, host_of(hosts, rank), waits[rank], median(others), waits_rows);
  }
  return out;
}

std::string format_capacity_lines(const std::vector<ResultRow>& rows, const LinkCapacity& c) {
  if (c.gbps <= 0) return fmt::format("# Is this normal? Not compared: {}\n", c.what);
  std::string out = fmt::format("# Is this normal? This link can carry {:.3g} GB/s: {} (on {})\n",
                                c.gbps, c.what, c.host);
  for (const auto& s : capacity_shares(rows, c))
    out +=
        fmt::format("# {}: peak busbw {:.3g} GB/s (at {} B) is {:.0f} % of what this link can do\n",
                    s.collective, s.peak_busbw_gbps, s.size_bytes, s.percent);
  return out;
}

std::string format_trailer(const std::string& collective, const Summary& s) {
  std::string out = fmt::format("# Out of bounds values : {} {}\n", s.wrong_total,
                                s.wrong_total == 0 ? "OK" : "FAILED");
  char avg[64];
  std::snprintf(avg, sizeof avg, "%g", s.avg_busbw_gbps);
  out += fmt::format("# Avg bus bandwidth    : {} \n", avg);  // nccl-tests' trailing space
  char peak[64], largest[64];
  std::snprintf(peak, sizeof peak, "%g", s.peak_busbw_gbps);
  std::snprintf(largest, sizeof largest, "%g", s.largest_size_busbw_gbps);
  out += fmt::format("# Peak bus bandwidth   : {} (at {} B)\n", peak, s.peak_size_bytes);
  out += fmt::format("# Busbw at max size    : {} (at {} B)\n", largest, s.largest_size_bytes);
  out += fmt::format("#\n# Collective test concluded: {}_perf\n", collective);
  return out;
}

}  // namespace collie::reports
