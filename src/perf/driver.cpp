#include "perf/driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/cpu_wait.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/printable.h"
#include "perf/combine.h"
#include "perf/host_exchange.h"
#include "perf/memory_report.h"
#include "perf/run_meta.h"
#include "perf/step_tracker.h"
#include "perf/test_hooks.h"
#include "perf/timed_loop.h"
#include "perf/validation.h"

namespace collie::perf {
namespace {

using SteadyClock = std::chrono::steady_clock;
using reports::ResultRow;

// "SIGINT" for SIGINT: how results name the signal that stopped a run.
std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// One benchmarked combination.
struct Job {
  const CollectiveDescriptor* desc;
  DType dtype;
  ReduceOp op;
  int root;  // -1 for rootless
  int cycle;
};

class Driver {
 public:
  Driver(ProcessGroup& pg, const PerfOptions& o, ResultSink* sink, const std::atomic<int>* stop)
      : pg_(pg),
        o_(o),
        sink_(pg.rank() == 0 ? sink : nullptr),
        stop_(stop),
        dev_(pg.device_runtime()),
        timeout_(o.timeout == kUseGroupTimeout ? pg.info().timeout : o.timeout),
        steps_(
            pg.info().store, pg.rank(), pg.size(), timeout_, kExitTimeout,
            [&pg] { return pg.last_collective_seq(); }, o.on_hang) {}

  PerfOutcome run(const std::string& version) {
    try {
      return run_all(version);
    } catch (const TimeoutError& e) {
      steps_.report_position();  // rank 0 below tells "still here" from frozen
      const std::string who = pg_.rank() == 0 ? steps_.laggards() : "";
      // The backend's message names the rank, the op and the deadline; this adds where in the
      // sweep it was and, on rank 0, who had not got there.
      throw TimeoutError(fmt::format("{} [perf step '{}']{}{}", e.what(), steps_.current(),
                                     who.empty() ? "" : "; ", who));
    } catch (const NetworkError& e) {
      // A peer that timed out first and exited closes its connections: the rank behind the
      // stall is still the one to name.
      steps_.report_position();
      const std::string who = pg_.rank() == 0 ? steps_.laggards() : "";
      if (who.empty()) throw;
      throw NetworkError(fmt::format("{}; {}", e.what(), who));
    }
  }

 private:
  PerfOutcome run_all(const std::string& version) {
    std::vector<const CollectiveDescriptor*> descs;
    for (const auto& name : o_.collectives) {
      const CollectiveDescriptor* d = find_collective(name);
      if (d == nullptr) throw InvalidArgument("unknown collective " + quote(name));
      descs.push_back(d);
    }
    if (o_.graph_launches > 0 && !dev_.supports_graphs())
      throw DeviceError(fmt::format("-G needs a CUDA backend (--backend nccl); {} runs on the host",
                                    pg_.backend_name()));
    if (o_.root >= pg_.size())
      throw InvalidArgument(
          fmt::format("root {} is outside the world of {} ranks (-r)", o_.root, pg_.size()));
    PerfOutcome out;
    if (std::any_of(descs.begin(), descs.end(), [](auto* d) { return d->traffic_layout; }))
      agree_on_traffic();
    steps_.enter("exchange host names");
    pids_ = fill_run_meta(pg_, dev_, timeout_, version, out.result.meta);
    out.result.meta.test_hooks = o_.hooks.active;
    if (sink_) {
      sink_->run_started(out.result.meta);
      if (!o_.hooks.active.empty()) sink_->note("# " + o_.hooks.warning());
    }
    if (o_.collectives_all) leave_out_too_small(descs);
    total_rows_ = estimate_rows(descs);
    const bool soak = o_.cycles == 0 || o_.duration.count() > 0;
    const auto started = SteadyClock::now();
    // One collective prints one table however many cycles run, as nccl-tests' -N does: the
    // header before the first cycle, every cycle's rows under it, the trailer after the last.
    // Several collectives print one table each per cycle.
    one_table_ = descs.size() == 1;
    for (int cycle = 0;; ++cycle) {
      // A soak keeps only the current cycle's rows so memory stays flat however long it runs.
      if (soak) out.result.rows.clear();
      rows_done_ = 0;
      if (sink_) sink_->cycle_started(cycle, soak);
      for (const CollectiveDescriptor* d : descs) {
        if (stopped_by_ == 0) run_collective(*d, cycle, out);
      }
      if (stopped_by_ != 0) break;  // every rank saw the same flag with the same row
      const bool count_done = o_.cycles > 0 && cycle + 1 >= o_.cycles;
      if (!soak) {
        if (count_done) break;
        continue;
      }
      const bool time_done = o_.duration.count() > 0 && SteadyClock::now() - started >= o_.duration;
      if (agree_to_stop(count_done || time_done)) break;
    }
    if (one_table_ && stopped_by_ == 0) finish_collective(*descs.front(), out.result.rows);
    out.wrong_total = wrong_total_;
    out.stopped_by = stopped_by_;
    if (pg_.rank() == 0) {
      out.result.meta.finished_at = now_iso8601();
      // An interrupted run is not complete: no summary (so "complete": false), and the signal
      // is named. Every row it did finish is kept.
      if (stopped_by_ == 0) {
        out.result.summary = reports::summarize(out.result.rows, pg_.size());
      } else {
        out.result.meta.interrupted_by = signal_name(stopped_by_);
        if (sink_)
          sink_->note(fmt::format("# Interrupted by {}: {} rows measured; no summary",
                                  out.result.meta.interrupted_by, out.result.rows.size()));
      }
    }
    return out;
  }

  // Every rank builds the traffic from its own flags, variables and matrix file: one all_gather
  // of their fingerprints makes sure they are the same before any rank sends by them.
  void agree_on_traffic() {
    steps_.enter("agree on the alltoallv traffic");
    traffic_.emplace(o_.traffic, pg_.size());
    // nccl-tests: -e bounds the buffers, so it must hold the matrix's busiest rank.
    if (o_.traffic.fixed_bytes() && traffic_->max_rank_bytes(0) > o_.max_bytes)
      throw InvalidArgument(fmt::format(
          "traffic matrix {} needs -e of at least {} bytes (its busiest rank's send or receive "
          "bytes on {} ranks); -e is {}",
          o_.traffic.matrix_path, traffic_->max_rank_bytes(0), pg_.size(), o_.max_bytes));
    const uint64_t mine = o_.traffic.fingerprint();
    std::vector<uint64_t> all(pg_.size());
    all_gather_host(pg_, TensorView::cpu(const_cast<uint64_t*>(&mine), 1, DType::UInt64),
                    TensorView::cpu(all.data(), all.size(), DType::UInt64), timeout_);
    for (int r = 0; r < pg_.size(); ++r) {
      if (all[r] != all[0])
        throw InvalidArgument(fmt::format(
            "[Rank {}] alltoallv traffic differs between ranks: rank {}'s is not rank 0's (this "
            "rank has {}); give every rank the same --traffic, NCCL_TESTS_ALLTOALLV_* variables "
            "and matrix file",
            pg_.rank(), r, o_.traffic.describe()));
    }
  }

  // The sweep sizes of `d`: one row for barrier, one for traffic of fixed bytes (a matrix:
  // its busiest rank's bytes), else -b..-e.
  std::vector<int64_t> sizes_for(const CollectiveDescriptor& d) const {
    if (d.latency_only) return {0};
    if (d.traffic_layout && o_.traffic.fixed_bytes()) return {traffic_->max_rank_bytes(0)};
    return sweep_sizes(o_);
  }

  Layout layout_for(const CollectiveDescriptor& d, int64_t bytes, DType dt) const {
    const size_t elems = static_cast<size_t>(bytes) / dtype_size(dt);
    if (d.traffic_layout) return d.traffic_layout(elems, dt, pg_.size(), pg_.rank(), *traffic_);
    return d.layout(elems, pg_.size());
  }

  // Rank 0's one-line record of the traffic a table was measured with.
  void note_traffic(const CollectiveDescriptor& d) {
    if (!sink_ || !d.traffic_layout) return;
    sink_->note(fmt::format("# {} traffic: {}; repeat with {}", d.name, o_.traffic.describe(),
                            o_.traffic.repeat_flags()));
    if (o_.traffic.fixed_bytes() && o_.traffic.matrix_dim > pg_.size())
      sink_->note(fmt::format("# {} traffic: the matrix's first {} rows and columns of {}", d.name,
                              pg_.size(), o_.traffic.matrix_dim));
  }

  // Rank 0's clock decides; one broadcast per cycle boundary gives every rank the same answer,
  // so no rank starts a cycle its peers will not join.
  bool agree_to_stop(bool rank0_wants_stop) {
    steps_.enter("agree whether to stop the soak");
    int32_t flag = pg_.rank() == 0 && rank0_wants_stop ? 1 : 0;
    broadcast_host(pg_, TensorView::cpu(&flag, 1, DType::Int32), 0, timeout_);
    return flag != 0;
  }

  std::vector<int> roots_for(const CollectiveDescriptor& d) const {
    if (!d.rooted) return {-1};
    if (o_.root >= 0) return {o_.root};
    std::vector<int> r(pg_.size());
    for (int i = 0; i < pg_.size(); ++i) r[i] = i;
    return r;
  }

  size_t estimate_rows(const std::vector<const CollectiveDescriptor*>& descs) const {
    size_t n = 0;
    for (auto* d : descs) {
      if (d->latency_only) {
        ++n;
        continue;
      }
      n += o_.dtypes.size() * (d->reduces ? o_.ops.size() : 1) * roots_for(*d).size() *
           sizes_for(*d).size();
    }
    return std::max<size_t>(n, 1);
  }

  // Asked for the device the group's buffers live on (host for gloo/mpi, CUDA for nccl).
  bool supported(const CollectiveDescriptor& d, DType dt, ReduceOp op) const {
    const Capabilities& caps = pg_.capabilities();
    const DeviceType dev = dev_.device().type;
    if (d.latency_only) return caps.supports(d.op_type, dev);
    if (d.reduces) return caps.supports(d.op_type, dev, dt, op);
    if (d.paired_op && !caps.supports(*d.paired_op, dev, dt)) return false;
    return caps.supports(d.op_type, dev, dt);
  }

  // A sweep whose every size gives the ranks nothing to move would end with no row, complete and
  // exit 0: a run that measured nothing passing for one that measured. Every rank computes the
  // same layouts, so every rank refuses together, before the collective's first row.
  void check_measures_something(const CollectiveDescriptor& d) const {
    if (d.latency_only) return;
    for (DType dt : o_.dtypes) {
      for (int64_t bytes : sizes_for(d)) {
        const Layout l = layout_for(d, bytes, dt);
        if (l.send_count > 0 || l.recv_count > 0) return;
      }
    }
    const std::string what =
        d.traffic_layout && o_.traffic.fixed_bytes()
            ? fmt::format(
                  "its traffic, {}, sends nothing once each cell is cut down to a "
                  "multiple of {} bytes (raise the scale: --traffic-scale)",
                  o_.traffic.describe(), kTrafficAlign)
            : fmt::format(
                  "no size from {} to {} bytes gives a rank one element to move on {} "
                  "ranks{} (raise -e)",
                  o_.min_bytes, o_.max_bytes, pg_.size(),
                  d.traffic_layout ? fmt::format(" (each peer's share is cut down to a "
                                                 "multiple of {} bytes)",
                                                 kTrafficAlign)
                                   : "");
    throw InvalidArgument(fmt::format("{}: nothing to measure: {}", d.name, what));
  }

  // "all" on a group smaller than a collective needs (sendrecv on one rank): that collective is
  // left out with a note, as one that the backend does not support is; named on its own, it is
  // refused (run_collective).
  void leave_out_too_small(std::vector<const CollectiveDescriptor*>& descs) const {
    std::erase_if(descs, [&](const CollectiveDescriptor* d) {
      if (pg_.size() >= d->min_ranks) return false;
      if (sink_)
        sink_->note(fmt::format("# skipping {}: it needs at least {} ranks, this run has {}",
                                d->name, d->min_ranks, pg_.size()));
      return true;
    });
  }

  void run_collective(const CollectiveDescriptor& d, int cycle, PerfOutcome& out) {
    if (pg_.size() < d.min_ranks) {
      throw InvalidArgument(fmt::format("{} needs at least {} ranks (use -np {} or more)", d.name,
                                        d.min_ranks, d.min_ranks));
    }
    if (cycle == 0) check_measures_something(d);
    if (sink_ && (!one_table_ || cycle == 0)) {
      reports::TableHeader h;
      h.collective = d.name;
      h.min_bytes = o_.min_bytes;
      h.max_bytes = o_.max_bytes;
      h.step_bytes = o_.step_bytes;
      h.step_factor = o_.step_factor;
      h.warmup_iters = o_.warmup_iters;
      h.iters = o_.iters;
      h.agg_iters = o_.agg_iters;
      h.check_iters = o_.check_iters;
      h.world_size = pg_.size();
      h.hosts = out.result.meta.hosts;
      h.devices = out.result.meta.devices;
      h.graph_launches = o_.graph_launches;
      h.pids = pids_;
      h.blocking = o_.blocking;
      h.timestamps = o_.timestamps;
      h.per_iter = o_.report_iters;
      // The header's "iters:" is -n; without -n the large sizes run fewer (options.h).
      const int64_t top = sweep_sizes(o_).back();
      if (!d.latency_only && iters_for(o_, top) != o_.iters)
        h.iters_note = fmt::format(
            "iters: {} up to 1 MiB, then {} x 1 MiB / size, at least 2 ({} at {} B); -n {} runs "
            "{} at every size",
            o_.iters, o_.iters, iters_for(o_, top), top, o_.iters, o_.iters);
      sink_->collective_started(h);
      note_traffic(d);
    }
    std::vector<ResultRow> rows;
    int ran = 0;
    const std::vector<DType> dtypes =
        d.latency_only ? std::vector<DType>{DType::Float32} : o_.dtypes;
    const std::vector<ReduceOp> ops = d.reduces ? o_.ops : std::vector<ReduceOp>{ReduceOp::Sum};
    for (DType dt : dtypes) {
      for (ReduceOp op : ops) {
        if (!supported(d, dt, op)) {
          if (sink_)
            sink_->note(fmt::format("# skipping {} {} {}: not supported by the {} backend", d.name,
                                    nccl_tests_name(dt), d.reduces ? reduce_op_name(op) : "none",
                                    pg_.backend_name()));
          continue;
        }
        ++ran;
        for (int root : roots_for(d)) {
          if (stopped_by_ == 0) run_sweep(Job{&d, dt, op, root, cycle}, rows);
        }
      }
    }
    if (ran == 0)
      throw InvalidArgument(
          fmt::format("the {} backend supports none of the requested dtype/op "
                      "combinations for {} (see `collie info`)",
                      pg_.backend_name(), d.name));
    if (!one_table_) finish_collective(d, rows);
    out.result.rows.insert(out.result.rows.end(), rows.begin(), rows.end());
  }

  // The end of a collective's table: -M's memory lines, then the trailer over `rows`. A
  // collective cut short by a stop signal gets neither: the "Avg bus bandwidth" line would
  // average a partial sweep.
  void finish_collective(const CollectiveDescriptor& d, const std::vector<ResultRow>& rows) {
    if (stopped_by_ != 0) return;
    if (o_.memory_report) report_memory();
    if (sink_) sink_->collective_finished(d.name, rows, reports::summarize(rows, pg_.size()));
  }

  void run_sweep(const Job& j, std::vector<ResultRow>& rows) {
    const size_t ts = dtype_size(j.dtype);
    for (int64_t bytes : sizes_for(*j.desc)) {
      if (stopped_by_ != 0) return;
      const Layout l = layout_for(*j.desc, bytes, j.dtype);
      ++rows_done_;
      // Below one element per rank (or a matrix of zeros): nothing to measure.
      if (!j.desc->latency_only && l.send_count == 0 && l.recv_count == 0) continue;
      const int iters =
          iters_for(o_, static_cast<int64_t>(std::max(l.send_count, l.recv_count) * ts));
      const bool want_out = o_.placement != Placement::In;
      const bool want_in = o_.placement != Placement::Out;
      std::optional<ResultRow> out_row, in_row;
      if (want_out) out_row = measure(j, l, false, iters);
      if (want_in) in_row = measure(j, l, true, iters);
      if (pg_.rank() == 0) {
        if (out_row) rows.push_back(*out_row);
        if (in_row) rows.push_back(*in_row);
        if (sink_) {
          if (l.traffic && o_.traffic_summary) note_traffic_summary(*l.traffic, out_row, in_row);
          sink_->row(out_row ? &*out_row : nullptr, in_row ? &*in_row : nullptr);
          sink_->progress(std::min(1.0, static_cast<double>(rows_done_) / total_rows_));
        }
      }
    }
  }

  // NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: nccl-tests prints these inside the row's line, which
  // breaks it for parsers; collie prints them as '#' lines before the row, one block per
  // placement measured.
  void note_traffic_summary(const RankTraffic& t, const std::optional<ResultRow>& out,
                            const std::optional<ResultRow>& in) {
    for (const auto* r : {&out, &in}) {
      if (!*r) continue;
      for (const std::string& line : traffic_summary_lines(o_.traffic, t, t.total, (*r)->time_us))
        sink_->note(line);
    }
  }

  std::string label(const Job& j, const Layout& l, bool in_place) const {
    return fmt::format("{} {} {} root {} count {} {}", j.desc->name, nccl_tests_name(j.dtype),
                       j.desc->reduces ? reduce_op_name(j.op) : "none", j.root, l.count,
                       in_place ? "in-place" : "out-of-place");
  }

  // Runs warmup, validation and the timed loop on this rank, then combines every rank's numbers.
  std::optional<ResultRow> measure(const Job& j, const Layout& l, bool in_place, int iters) {
    const std::string what = label(j, l, in_place);
    const LocalResult mine = run_local(j, l, in_place, iters, what);
    // One all_gather carries every rank's packed numbers (combine.h).
    steps_.enter(what + ": combine results");
    std::vector<double> v = pack_local(mine, stop_ ? stop_->load() : 0, o_.report_iters);
    std::vector<double> all(v.size() * pg_.size());
    all_gather_host(pg_, TensorView::cpu(v.data(), v.size(), DType::Float64),
                    TensorView::cpu(all.data(), all.size(), DType::Float64), timeout_);
    const RowTotals t = combine_totals(all, pg_.size());
    stopped_by_ = std::max(stopped_by_, t.stop);
    if (t.wrong > 0) wrong_total_ += t.wrong;
    if (pg_.rank() != 0) return std::nullopt;  // only rank 0 keeps and prints rows
    const RowContext ctx{j.desc, j.dtype,  j.op,  j.root,         j.cycle,
                         l,      in_place, iters, o_.report_iters};
    return std::move(combine_ranks(ctx, o_, all, pg_.size()).row);
  }

  // The buffers of one measurement on the group's device.
  struct Buffers {
    device::Buffer a, b, staging;
    TensorView send, recv;
  };

  Buffers allocate(const CollectiveDescriptor& d, const Layout& l, DType dt, bool in_place) {
    const int rank = pg_.rank();
    const size_t ts = dtype_size(dt);
    Buffers m;
    if (in_place) {
      const size_t n = std::max(rank * l.send_inplace_offset + l.send_count,
                                rank * l.recv_inplace_offset + l.recv_count);
      m.a = dev_.allocate(n * ts);
      m.send = dev_.view(m.a.data() + rank * l.send_inplace_offset * ts, l.send_count, dt);
      m.recv = dev_.view(m.a.data() + rank * l.recv_inplace_offset * ts, l.recv_count, dt);
      if (d.in_place_staging) m.staging = dev_.allocate(m.send.nbytes());
    } else {
      m.a = dev_.allocate(l.send_count * ts);
      m.b = dev_.allocate(l.recv_count * ts);
      m.send = dev_.view(m.a.data(), l.send_count, dt);
      m.recv = dev_.view(m.b.data(), l.recv_count, dt);
    }
    return m;
  }

  LocalResult run_local(const Job& j, const Layout& l, bool in_place, int iters,
                        const std::string& what) {
    const CollectiveDescriptor& d = *j.desc;
    const DType dt = j.dtype;
    const int rank = pg_.rank();
    Buffers bufs = allocate(d, l, dt, in_place);
    const TensorView send = bufs.send, recv = bufs.recv;
    CallArgs args{send,
                  recv,
                  in_place,
                  j.op,
                  std::max(j.root, 0),
                  timeout_,
                  false,
                  bufs.staging.data(),
                  &dev_,
                  l.traffic.get()};
    const DataSpec spec{dt, d.reduces ? j.op : ReduceOp::Sum, pg_.size(), o_.seed};
    LocalResult res;
    stall_if_asked(o_.hooks, rank, timeout_, steps_, what);

    auto warm_up = [&](const char* step) {
      steps_.enter(what + step);
      for (int w = 0; w < o_.warmup_iters; ++w) wait_all(d.run(pg_, args));
    };
    warm_up(": warmup");

    if (o_.check_iters > 0 && !d.latency_only && !(in_place && d.in_place_unchecked)) {
      steps_.enter(what + ": validation");
      const CheckCounts cc = validate(pg_, dev_, d, args, spec, l, o_.check_iters, o_.hooks);
      res.wrong = cc.wrong;
      res.first_wrong = cc.first_wrong;
      // The warm-up again after validation (its own buffers come and go), so the timed loop starts
      // as it would without -c: with no op after validation the first timed iteration ran ~2 ms
      // over its 0.8 ms in every run (MPI all_reduce of 4 MiB, 2 ranks, -w 5), which moved the
      // mean a nccl-tests user reads by ~40 us over 50 iterations; with one op 1.3-1.6x the
      // median, with the -w ops 1.06-1.34x (scripts/bench/README.md).
      if (o_.warmup_iters > 0) warm_up(": warmup after validation");
    }

    steps_.enter(what + ": timed");
    BarrierOptions bo;
    bo.timeout = timeout_;
    bo.in_metrics = false;  // lines the ranks up; not one of the measured ops
    pg_.barrier(bo)->wait();
    LoopSettings ls;
    ls.iters = iters;
    ls.agg_iters = o_.agg_iters;
    ls.blocking = o_.blocking;
    const bool delay = o_.hooks.delay_rank < 0 || o_.hooks.delay_rank == rank;
    ls.delay_us = delay ? o_.hooks.delay_us : 0;
    ls.work_units = o_.hooks.work_units;
    ls.graph_launches = o_.graph_launches;
    ls.timeout = timeout_;
    ls.arrivals = o_.report_iters;
    // -I: how long this rank waited for a CPU during the loop (a core something else keeps busy).
    const double cpu0 = o_.report_iters ? process_cpu_wait_seconds() : -1;
    const auto wall0 = std::chrono::steady_clock::now();
    LoopTiming t = time_loop(pg_, d, args, ls);
    if (cpu0 >= 0) {
      const double cpu1 = process_cpu_wait_seconds();
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      if (cpu1 >= cpu0 && wall > 0) res.cpu_wait = (cpu1 - cpu0) / wall;
    }
    res.avg_us = t.avg_us;
    res.iter_us = std::move(t.iter_us);
    res.wait_us = std::move(t.wait_us);
    return res;
  }

  // -M: after a collective's table, every rank's memory as its runtime sees it (rank 0 prints).
  void report_memory() {
    steps_.enter("exchange memory reports");
    const std::vector<device::MemoryReport> all = gather_memory(pg_, dev_, timeout_);
    if (!sink_) return;
    for (const std::string& line : memory_report_lines(all, dev_.host_accessible()))
      sink_->note(line);
  }

  ProcessGroup& pg_;
  const PerfOptions& o_;
  ResultSink* sink_;
  const std::atomic<int>* stop_;
  device::DeviceRuntime& dev_;
  int stopped_by_ = 0;
  const Millis timeout_;
  StepTracker steps_;
  std::vector<int> pids_;
  std::optional<TrafficModel> traffic_;  // when a collective takes the run's traffic
  size_t total_rows_ = 1;
  size_t rows_done_ = 0;   // in this cycle
  bool one_table_ = true;  // a single collective: one header and one trailer for every cycle
  int64_t wrong_total_ = 0;
};

}  // namespace

PerfOutcome run_perf(ProcessGroup& pg, const PerfOptions& options, ResultSink* sink,
                     const std::string& collie_version, const std::atomic<int>* stop) {
  Driver d(pg, options, sink, stop);
  return d.run(collie_version);
}

}  // namespace collie::perf
