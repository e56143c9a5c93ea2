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
#include "perf/host_exchange.h"
#include "perf/step_tracker.h"
#include "perf/timed_loop.h"

namespace collie::perf {
namespace {

using SteadyClock = std::chrono::steady_clock;
using reports::ResultRow;

// "SIGINT" for SIGINT: how results name the signal that stopped a run.
std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// 8-byte aligned host storage for any dtype (validation data, staged copies).
struct HostBuffer {
  std::vector<uint64_t> mem;
  explicit HostBuffer(size_t bytes = 0) : mem((bytes + 7) / 8 + 1) {}
  char* data() { return reinterpret_cast<char*>(mem.data()); }
};

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
      throw TimeoutError(fmt::format("[Rank {}] perf step '{}' exceeded {} ms: {}{}{}", pg_.rank(),
                                     steps_.current(), timeout_.count(), e.what(),
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
      if (d == nullptr) throw InvalidArgument("unknown collective '" + name + "'");
      descs.push_back(d);
    }
    if (o_.graph_launches > 0 && !dev_.supports_graphs())
      throw DeviceError(fmt::format("-G needs a CUDA backend (--backend nccl); {} runs on the host",
                                    pg_.backend_name()));
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
    broadcast_host(pg_, TensorView::cpu(&flag, 1, DType::Int32), 0, timeout_);
    return flag != 0;
  }

  void fill_meta(reports::RunMeta& m, const std::string& version) {
    steps_.enter("exchange host names");
    // Per rank: host name, pid, device index, bus id, device model (NUL-terminated fields).
    constexpr size_t kHost = 64, kBus = 24, kModel = 96;
    constexpr size_t kPid = kHost, kIndex = kPid + 8, kBusAt = kIndex + 8, kModelAt = kBusAt + kBus;
    constexpr size_t kStride = kModelAt + kModel;
    std::vector<uint8_t> mine(kStride, 0), all(kStride * pg_.size());
    gethostname(reinterpret_cast<char*>(mine.data()), kHost - 1);
    const int64_t pid = ::getpid();
    std::memcpy(mine.data() + kPid, &pid, 8);
    const device::Description desc = dev_.describe();
    const int64_t index = desc.index;
    std::memcpy(mine.data() + kIndex, &index, 8);
    std::memcpy(mine.data() + kBusAt, desc.bus_id.data(), std::min(desc.bus_id.size(), kBus - 1));
    std::memcpy(mine.data() + kModelAt, desc.model.data(), std::min(desc.model.size(), kModel - 1));
    all_gather_host(pg_, TensorView::cpu(mine.data(), mine.size(), DType::UInt8),
                    TensorView::cpu(all.data(), all.size(), DType::UInt8), timeout_);
    for (int r = 0; r < pg_.size(); ++r) {
      const uint8_t* p = all.data() + r * kStride;
      m.hosts.emplace_back(reinterpret_cast<const char*>(p));
      int64_t rp = 0, ri = 0;
      std::memcpy(&rp, p + kPid, 8);
      std::memcpy(&ri, p + kIndex, 8);
      pids_.push_back(static_cast<int>(rp));
      m.devices.push_back(reports::RankDevice{static_cast<int>(ri),
                                              reinterpret_cast<const char*>(p + kBusAt),
                                              reinterpret_cast<const char*>(p + kModelAt)});
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

  // Asked for the device the group's buffers live on (host for gloo/mpi, CUDA for nccl).
  bool supported(const CollectiveDescriptor& d, DType dt, ReduceOp op) const {
    const Capabilities& caps = pg_.capabilities();
    const DeviceType dev = dev_.device().type;
    if (d.latency_only) return caps.supports(d.op_type, dev);
    if (d.reduces) return caps.supports(d.op_type, dev, dt, op);
    if (d.paired_op && !caps.supports(*d.paired_op, dev, dt)) return false;
    return caps.supports(d.op_type, dev, dt);
  }

  void run_collective(const CollectiveDescriptor& d, int cycle, PerfOutcome& out) {
    if (pg_.size() < d.min_ranks) {
      throw InvalidArgument(fmt::format("{} needs at least {} ranks (use -np {} or more)", d.name,
                                        d.min_ranks, d.min_ranks));
    }
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
      h.devices = out.result.meta.devices;
      h.graph_launches = o_.graph_launches;
      h.pids = pids_;
      h.blocking = o_.blocking;
      h.timestamps = o_.timestamps;
      h.per_iter = o_.report_iters;
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
    if (o_.memory_report && stopped_by_ == 0) report_memory();
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
      const bool want_in = o_.placement != Placement::Out;
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
    all_gather_host(pg_, TensorView::cpu(v.data(), v.size(), DType::Float64),
                    TensorView::cpu(all.data(), all.size(), DType::Float64), timeout_);
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
    if (o_.report_iters) {
      r.samples_us = std::move(per_iter);
      r.iter_skip = o_.iter_skip;
      r.rank_samples_us.resize(pg_.size());
      for (int k = 0; k < pg_.size(); ++k)
        for (int it = o_.iter_skip; it < iters; ++it)
          r.rank_samples_us[k].push_back(all[k * stride + kIterAt + it]);
    }
    const double algbytes = static_cast<double>(l.count * ts) * d.algbw_ranks_factor(pg_.size());
    r.algbw_gbps = r.time_us > 0 ? algbytes / 1e3 / r.time_us : 0;
    r.busbw_gbps = r.algbw_gbps * d.busbw_factor(pg_.size());
    return r;
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

  Local run_local(const Job& j, const Layout& l, bool in_place, int iters,
                  const std::string& what) {
    const CollectiveDescriptor& d = *j.desc;
    const DType dt = j.dtype;
    const int rank = pg_.rank();
    Buffers bufs = allocate(d, l, dt, in_place);
    const TensorView send = bufs.send, recv = bufs.recv;
    CallArgs args{
        send, recv, in_place, j.op, std::max(j.root, 0), timeout_, false, bufs.staging.data(),
        &dev_};
    const DataSpec spec{dt, d.reduces ? j.op : ReduceOp::Sum, pg_.size(), o_.seed};
    Local res;
    stall_if_asked(what);

    steps_.enter(what + ": warmup");
    for (int w = 0; w < o_.warmup_iters; ++w) wait_all(d.run(pg_, args));

    if (o_.check_iters > 0 && !d.latency_only && !(in_place && d.in_place_unchecked)) {
      steps_.enter(what + ": validation");
      // Data is generated and checked on the host and copied once each way, outside the timed
      // loop (on the host runtime the copies are memmoves).
      const bool host = dev_.host_accessible();
      HostBuffer input(host ? 0 : send.nbytes()), got(host ? 0 : recv.nbytes());
      HostBuffer want(recv.nbytes());
      char* in = host ? static_cast<char*>(send.data) : input.data();
      char* out = host ? static_cast<char*>(recv.data) : got.data();
      res.wrong = 0;
      for (int c = 0; c < o_.check_iters; ++c) {
        d.init(spec, l, rank, args.root, in);
        if (!host) dev_.copy_to_device(send.data, in, send.nbytes());
        if (!in_place && d.in_place_api) dev_.copy(recv.data, send.data, send.nbytes());
        wait_all(d.run(pg_, args));
        const size_t n = d.expected(spec, l, rank, args.root, want.data());
        if (!host) dev_.copy_to_host(out, recv.data, n * dtype_size(dt));
        corrupt_if_asked(out, dt, n);
        const bool approx = d.reduces && j.op == ReduceOp::Avg;
        const CheckResult cr = compare(out, want.data(), n, dt, approx);
        res.wrong += cr.wrong;
        if (res.first_wrong < 0) res.first_wrong = cr.first_offset;
      }
    }

    steps_.enter(what + ": timed");
    BarrierOptions bo;
    bo.timeout = timeout_;
    pg_.barrier(bo)->wait();
    LoopSettings ls;
    ls.iters = iters;
    ls.agg_iters = o_.agg_iters;
    ls.blocking = o_.blocking;
    const bool delay = o_.hooks.delay_rank < 0 || o_.hooks.delay_rank == rank;
    ls.delay_us = delay ? o_.hooks.delay_us : 0;
    ls.graph_launches = o_.graph_launches;
    ls.timeout = timeout_;
    LoopTiming t = time_loop(pg_, d, args, ls);
    res.avg_us = t.avg_us;
    res.iter_us = std::move(t.iter_us);
    return res;
  }

  // -M: after a collective's table, every rank's memory as its runtime sees it (rank 0 prints).
  void report_memory() {
    steps_.enter("exchange memory reports");
    const device::MemoryReport m = dev_.memory();
    std::vector<double> mine = {static_cast<double>(m.total_bytes),
                                static_cast<double>(m.free_bytes),
                                static_cast<double>(m.peak_allocated_bytes)};
    std::vector<double> all(mine.size() * pg_.size());
    all_gather_host(pg_, TensorView::cpu(mine.data(), mine.size(), DType::Float64),
                    TensorView::cpu(all.data(), all.size(), DType::Float64), timeout_);
    if (!sink_) return;
    const auto mib = [](double b) {
      if (b < 0) return std::string("?");
      return b < (1 << 20) ? fmt::format("{:.1f} KiB", b / 1024)
                           : fmt::format("{:.1f} MiB", b / (1 << 20));
    };
    for (int r = 0; r < pg_.size(); ++r) {
      const double* p = all.data() + r * mine.size();
      sink_->note(fmt::format("#  Rank {:2d} memory: peak {} in perf buffers; {} {} total, {} free",
                              r, mib(p[2]), dev_.host_accessible() ? "host" : "device", mib(p[0]),
                              mib(p[1])));
    }
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

  // `got`: the host copy of this rank's result (n elements of dt).
  void corrupt_if_asked(char* got, DType dt, size_t checked) const {
    const TestHooks& h = o_.hooks;
    if (h.corrupt_rank != pg_.rank() || h.corrupt_offset < 0) return;
    if (static_cast<size_t>(h.corrupt_offset) >= checked) return;
    auto* p = reinterpret_cast<uint8_t*>(got) + h.corrupt_offset * dtype_size(dt);
    p[0] ^= 0x5a;  // low byte: changes the value in every dtype
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
