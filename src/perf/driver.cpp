#include "perf/driver.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "comm/registry.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "metrics/metrics.h"
#include "perf/step_tracker.h"

namespace collie::perf {
namespace {

using SteadyClock = std::chrono::steady_clock;
using reports::ResultRow;


// "SIGINT" for SIGINT: how results name the signal that stopped a run.
std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// 8-byte aligned storage for any dtype.
struct Buffer {
  std::vector<uint64_t> mem;
  explicit Buffer(size_t bytes = 0) : mem((bytes + 7) / 8 + 1) {}
  char* data() { return reinterpret_cast<char*>(mem.data()); }
};

TensorView view(char* base, size_t first, size_t count, DType d) {
  return TensorView::cpu(base + first * dtype_size(d), count, d);
}

void wait_all(const std::vector<std::shared_ptr<Work>>& works) {
  for (const auto& w : works) w->wait();
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// One benchmarked combination.
struct Job {
  const CollectiveDescriptor* desc;
  DType dtype;
  ReduceOp op;
  int root;  // -1 for rootless
  int cycle;
};

// What one rank measured for one size and placement.
struct Local {
  double avg_us = 0;
  int64_t wrong = -1;  // -1 = not checked
  int64_t first_wrong = -1;
  std::vector<double> iter_us;
};

class Driver {
 public:
  Driver(ProcessGroup& pg, const PerfOptions& o, ResultSink* sink, const std::atomic<int>* stop)
      : pg_(pg),
        o_(o),
        sink_(pg.rank() == 0 ? sink : nullptr),
        stop_(stop),
        timeout_(o.timeout == kUseGroupTimeout ? pg.info().timeout : o.timeout),
        steps_(
            pg.info().store, pg.rank(), pg.size(), timeout_, kExitTimeout,
            [&pg] { return pg.last_collective_seq(); }, o.on_hang) {}

  PerfOutcome run(const std::string& version) {
    try {
      return run_all(version);
    } catch (const TimeoutError& e) {
      const std::string who = pg_.rank() == 0 ? steps_.laggards() : "";
      throw TimeoutError(fmt::format("[Rank {}] perf step '{}' exceeded {} ms: {}{}{}", pg_.rank(),
                                     steps_.current(), timeout_.count(), e.what(),
                                     who.empty() ? "" : "; ", who));
    }
  }

 private:
  PerfOutcome run_all(const std::string& version) {
    std::vector<const CollectiveDescriptor*> descs;
    for (const auto& name : o_.collectives) {
      const CollectiveDescriptor* d = find_collective(name);
      if (d == nullptr) throw InvalidArgument("unknown collective '" + name + "'");
      descs.push_back(d);
    }
    if (o_.root >= pg_.size())
      throw InvalidArgument(
          fmt::format("root {} is outside the world of {} ranks (-r)", o_.root, pg_.size()));
    PerfOutcome out;
    fill_meta(out.result.meta, version);
    out.result.meta.test_hooks = o_.hooks.active;
    if (sink_) {
      sink_->run_started(out.result.meta);
      if (!o_.hooks.active.empty()) sink_->note("# " + o_.hooks.warning());
    }
    total_rows_ = estimate_rows(descs);
    const bool soak = o_.cycles == 0 || o_.duration.count() > 0;
    const auto started = SteadyClock::now();
    for (int cycle = 0;; ++cycle) {
      // A soak keeps only the current cycle's rows so memory stays flat however long it runs.
      if (soak) out.result.rows.clear();
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

  // Rank 0's clock decides; one broadcast per cycle boundary gives every rank the same answer,
  // so no rank starts a cycle its peers will not join.
  bool agree_to_stop(bool rank0_wants_stop) {
    steps_.enter("agree whether to stop the soak");
    int32_t flag = pg_.rank() == 0 && rank0_wants_stop ? 1 : 0;
    BroadcastOptions bo;
    bo.root = 0;
    bo.timeout = timeout_;
    pg_.broadcast(TensorView::cpu(&flag, 1, DType::Int32), bo)->wait();
    return flag != 0;
  }

  void fill_meta(reports::RunMeta& m, const std::string& version) {
    steps_.enter("exchange host names");
    constexpr size_t kHost = 64;
    std::vector<uint8_t> mine(kHost + 8, 0), all((kHost + 8) * pg_.size());
    gethostname(reinterpret_cast<char*>(mine.data()), kHost - 1);
    const int64_t pid = ::getpid();
    std::memcpy(mine.data() + kHost, &pid, 8);
    AllGatherOptions ao;
    ao.timeout = timeout_;
    pg_.all_gather(TensorView::cpu(mine.data(), mine.size(), DType::UInt8),
                   TensorView::cpu(all.data(), all.size(), DType::UInt8), ao)
        ->wait();
    for (int r = 0; r < pg_.size(); ++r) {
      const uint8_t* p = all.data() + r * (kHost + 8);
      m.hosts.emplace_back(reinterpret_cast<const char*>(p));
      int64_t rp = 0;
      std::memcpy(&rp, p + kHost, 8);
      pids_.push_back(static_cast<int>(rp));
    }
    m.version = version;
    m.backend = pg_.backend_name();
    m.world_size = pg_.size();
    if (const BackendRegistration* b = find_backend(pg_.backend_name()); b && !b->version.empty())
      m.library_versions[b->name] = b->version;
    m.library_versions["collie"] = version;
    m.started_at = now_iso8601();
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
    const size_t sizes = sweep_sizes(o_).size();
    for (auto* d : descs) {
      if (d->latency_only) {
        ++n;
        continue;
      }
      n += o_.dtypes.size() * (d->reduces ? o_.ops.size() : 1) * roots_for(*d).size() * sizes;
    }
    return std::max<size_t>(n, 1);
  }

  bool supported(const CollectiveDescriptor& d, DType dt, ReduceOp op) const {
    const Capabilities& caps = pg_.capabilities();
    if (d.latency_only) return caps.supports(d.op_type, DeviceType::CPU);
    if (d.reduces) return caps.supports(d.op_type, DeviceType::CPU, dt, op);
    if (d.op_type == OpType::Send)
      return caps.supports(OpType::Send, DeviceType::CPU, dt) &&
             caps.supports(OpType::Recv, DeviceType::CPU, dt);
    return caps.supports(d.op_type, DeviceType::CPU, dt);
  }

  void run_collective(const CollectiveDescriptor& d, int cycle, PerfOutcome& out) {
    if (d.op_type == OpType::Send && pg_.size() < 2)
      throw InvalidArgument("sendrecv needs at least 2 ranks (use -np 2 or more)");
    if (sink_) {
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
      h.pids = pids_;
      sink_->collective_started(h);
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
    // A collective cut short by a stop signal gets no "Avg bus bandwidth" line: it would average
    // a partial sweep.
    if (sink_ && stopped_by_ == 0) {
      sink_->collective_finished(d.name, rows, reports::summarize(rows, pg_.size()));
    }
    out.result.rows.insert(out.result.rows.end(), rows.begin(), rows.end());
  }

  void run_sweep(const Job& j, std::vector<ResultRow>& rows) {
    const size_t ts = dtype_size(j.dtype);
    const std::vector<int64_t> sizes =
        j.desc->latency_only ? std::vector<int64_t>{0} : sweep_sizes(o_);
    for (int64_t bytes : sizes) {
      if (stopped_by_ != 0) return;
      const Layout l = j.desc->layout(static_cast<size_t>(bytes) / ts, pg_.size());
      ++rows_done_;
      if (!j.desc->latency_only && l.count == 0) continue;  // below one element per rank
      const int iters = iters_for(o_, bytes);
      const bool want_out = o_.placement != Placement::In;
      const bool want_in = o_.placement != Placement::Out && !j.desc->in_place_unsupported;
      std::optional<ResultRow> out_row, in_row;
      if (want_out) out_row = measure(j, l, false, iters);
      if (want_in) in_row = measure(j, l, true, iters);
      if (pg_.rank() == 0) {
        publish(out_row ? *out_row : in_row ? *in_row : ResultRow{});
        if (out_row) rows.push_back(*out_row);
        if (in_row) rows.push_back(*in_row);
        if (sink_) {
          sink_->row(out_row ? &*out_row : nullptr, in_row ? &*in_row : nullptr);
          sink_->progress(std::min(1.0, static_cast<double>(rows_done_) / total_rows_));
        }
      }
    }
  }

  // Live bandwidth gauges for Prometheus (collie_perf_busbw_gbps / _algbw_gbps).
  void publish(const ResultRow& r) {
    if (r.collective.empty()) return;
    Metrics::global().set_perf_result(pg_.backend_name(), r.collective, r.dtype,
                                      static_cast<uint64_t>(r.size_bytes), r.algbw_gbps,
                                      r.busbw_gbps);
  }

  std::string label(const Job& j, const Layout& l, bool in_place) const {
    return fmt::format("{} {} {} root {} count {} {}", j.desc->name, nccl_tests_name(j.dtype),
                       j.desc->reduces ? reduce_op_name(j.op) : "none", j.root, l.count,
                       in_place ? "in-place" : "out-of-place");
  }

  // Runs warmup, validation and the timed loop on this rank, then combines every rank's numbers.
  std::optional<ResultRow> measure(const Job& j, const Layout& l, bool in_place, int iters) {
    const std::string what = label(j, l, in_place);
    const Local mine = run_local(j, l, in_place, iters, what);
    // One all_gather carries [avg, wrong, first_wrong, stop, iteration times...] of every rank.
    steps_.enter(what + ": combine results");
    constexpr size_t kIterAt = 4;
    std::vector<double> v = {mine.avg_us, static_cast<double>(mine.wrong),
                             static_cast<double>(mine.first_wrong),
                             static_cast<double>(stop_ ? stop_->load() : 0)};
    v.insert(v.end(), mine.iter_us.begin(), mine.iter_us.end());
    std::vector<double> all(v.size() * pg_.size());
    AllGatherOptions ao;
    ao.timeout = timeout_;
    pg_.all_gather(TensorView::cpu(v.data(), v.size(), DType::Float64),
                   TensorView::cpu(all.data(), all.size(), DType::Float64), ao)
        ->wait();
    const size_t stride = v.size();
    int64_t wrong = -1;
    ResultRow r;
    for (int k = 0; k < pg_.size(); ++k) {
      const double* p = all.data() + k * stride;
      stopped_by_ = std::max(stopped_by_, static_cast<int>(p[3]));
      const auto w = static_cast<int64_t>(p[1]);
      if (w >= 0) wrong = std::max<int64_t>(wrong, 0) + w;
      if (w > 0 && r.wrong_rank < 0) {
        r.wrong_rank = k;
        r.wrong_offset = static_cast<int64_t>(p[2]);
      }
    }
    if (wrong > 0) wrong_total_ += wrong;
    if (pg_.rank() != 0) return std::nullopt;
    const CollectiveDescriptor& d = *j.desc;
    const size_t ts = dtype_size(j.dtype);
    r.collective = d.name;
    r.placement = in_place ? "in" : "out";
    r.size_bytes = static_cast<int64_t>(std::max(l.send_count, l.recv_count) * ts);
    r.count = static_cast<int64_t>(l.count);
    r.dtype = std::string(nccl_tests_name(j.dtype));
    r.redop = d.reduces ? std::string(reduce_op_name(j.op)) : "none";
    r.root = j.root;
    r.wrong = wrong;
    r.iters = iters;
    r.agg_iters = o_.agg_iters;
    r.cycle = j.cycle;
    double sum = 0, mn = 0, mx = 0;
    for (int k = 0; k < pg_.size(); ++k) {
      const double t = all[k * stride];
      r.rank_time_us.push_back(t);
      sum += t;
      mn = k == 0 ? t : std::min(mn, t);
      if (k == 0 || t > mx) {
        mx = t;
        r.slowest_rank = k;
      }
    }
    switch (o_.average) {
      case TimeReduce::Rank0:
        r.time_us = all[0];
        break;
      case TimeReduce::Avg:
        r.time_us = sum / pg_.size();
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
    for (int it = o_.iter_skip; it < iters; ++it) {
      double m = 0;
      for (int k = 0; k < pg_.size(); ++k) m = std::max(m, all[k * stride + kIterAt + it]);
      per_iter.push_back(m);
    }
    r.iter = reports::compute_iter_stats(per_iter);
    if (o_.report_iters) r.samples_us = std::move(per_iter);
    const double algbytes = static_cast<double>(l.count * ts) * d.algbw_ranks_factor(pg_.size());
    r.algbw_gbps = r.time_us > 0 ? algbytes / 1e3 / r.time_us : 0;
    r.busbw_gbps = r.algbw_gbps * d.busbw_factor(pg_.size());
    return r;
  }

  Local run_local(const Job& j, const Layout& l, bool in_place, int iters,
                  const std::string& what) {
    const CollectiveDescriptor& d = *j.desc;
    const DType dt = j.dtype;
    const int rank = pg_.rank();
    Buffer a, b;
    TensorView send, recv;
    if (in_place) {
      const size_t n = std::max(rank * l.send_inplace_offset + l.send_count,
                                rank * l.recv_inplace_offset + l.recv_count);
      a = Buffer(n * dtype_size(dt));
      send = view(a.data(), rank * l.send_inplace_offset, l.send_count, dt);
      recv = view(a.data(), rank * l.recv_inplace_offset, l.recv_count, dt);
    } else {
      a = Buffer(l.send_count * dtype_size(dt));
      b = Buffer(l.recv_count * dtype_size(dt));
      send = view(a.data(), 0, l.send_count, dt);
      recv = view(b.data(), 0, l.recv_count, dt);
    }
    CallArgs args{send, recv, in_place, j.op, std::max(j.root, 0), timeout_, false};
    const DataSpec spec{dt, d.reduces ? j.op : ReduceOp::Sum, pg_.size(), o_.seed};
    Local res;
    stall_if_asked(what);

    steps_.enter(what + ": warmup");
    for (int w = 0; w < o_.warmup_iters; ++w) wait_all(d.run(pg_, args));

    if (o_.check_iters > 0 && !d.latency_only) {
      steps_.enter(what + ": validation");
      Buffer want(l.recv_count * dtype_size(dt));
      res.wrong = 0;
      for (int c = 0; c < o_.check_iters; ++c) {
        d.init(spec, l, rank, args.root, send.data);
        if (!in_place && d.in_place_api) std::memcpy(recv.data, send.data, send.nbytes());
        wait_all(d.run(pg_, args));
        const size_t n = d.expected(spec, l, rank, args.root, want.data());
        corrupt_if_asked(recv, n);
        const bool approx = d.reduces && j.op == ReduceOp::Avg;
        const CheckResult cr = compare(recv.data, want.data(), n, dt, approx);
        res.wrong += cr.wrong;
        if (res.first_wrong < 0) res.first_wrong = cr.first_offset;
      }
    }

    steps_.enter(what + ": timed");
    BarrierOptions bo;
    bo.timeout = timeout_;
    pg_.barrier(bo)->wait();
    const bool delay =
        o_.hooks.delay_us > 0 && (o_.hooks.delay_rank < 0 || o_.hooks.delay_rank == rank);
    const bool batch = o_.agg_iters > 1 && !o_.blocking;
    args.async_op = batch;
    std::vector<std::shared_ptr<Work>> pending;
    double total = 0;
    res.iter_us.reserve(iters);
    for (int it = 0; it < iters; ++it) {
      const auto t0 = SteadyClock::now();
      for (int m = 0; m < o_.agg_iters; ++m) {
        if (delay) std::this_thread::sleep_for(std::chrono::microseconds(o_.hooks.delay_us));
        auto works = d.run(pg_, args);
        if (batch) {
          pending.insert(pending.end(), works.begin(), works.end());
        } else {
          wait_all(works);
        }
      }
      wait_all(pending);
      pending.clear();
      const double us = std::chrono::duration<double, std::micro>(SteadyClock::now() - t0).count();
      total += us;
      res.iter_us.push_back(us / o_.agg_iters);
    }
    res.avg_us = iters > 0 ? total / (static_cast<double>(iters) * o_.agg_iters) : 0;
    return res;
  }

  // COLLIE_PERF_TEST_STALL: a real stall (this rank stays out of the row's collectives while
  // the file exists), bounded by the step timeout like any other wait.
  void stall_if_asked(const std::string& what) {
    const TestHooks& h = o_.hooks;
    if (h.stall_rank != pg_.rank() || h.stall_file.empty()) return;
    steps_.enter(what + ": test stall");
    const auto deadline = SteadyClock::now() + timeout_;
    while (std::filesystem::exists(h.stall_file) && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void corrupt_if_asked(const TensorView& recv, size_t checked) const {
    const TestHooks& h = o_.hooks;
    if (h.corrupt_rank != pg_.rank() || h.corrupt_offset < 0) return;
    if (static_cast<size_t>(h.corrupt_offset) >= checked) return;
    auto* p = static_cast<uint8_t*>(recv.data) + h.corrupt_offset * dtype_size(recv.dtype);
    p[0] ^= 0x5a;  // low byte: changes the value in every dtype
  }

  ProcessGroup& pg_;
  const PerfOptions& o_;
  ResultSink* sink_;
  const std::atomic<int>* stop_;
  int stopped_by_ = 0;
  const Millis timeout_;
  StepTracker steps_;
  std::vector<int> pids_;
  size_t total_rows_ = 1;
  size_t rows_done_ = 0;
  int64_t wrong_total_ = 0;
};

}  // namespace

PerfOutcome run_perf(ProcessGroup& pg, const PerfOptions& options, ResultSink* sink,
                     const std::string& collie_version, const std::atomic<int>* stop) {
  Driver d(pg, options, sink, stop);
  return d.run(collie_version);
}

}  // namespace collie::perf
