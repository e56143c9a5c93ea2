#include "probes/pairwise.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <unordered_map>

#include "comm/rendezvous.h"
#include "core/clock.h"
#include "core/cpu_wait.h"
#include "core/env.h"
#include "core/log.h"
#include "core/tensor.h"
#include "probes/host_capacity.h"
#include "probes/schedule.h"
#include "stack/init.h"
#include "store/store.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

double seconds_since(Clock::TimePoint t) {
  return std::chrono::duration<double>(Clock::system().now() - t).count();
}

struct PairMeasure {
  double cpu_wait = 0;  // share of the bandwidth phase spent waiting for a CPU (this process)
  double lat_us = NAN;
  double bw_gbps = NAN;         // this rank -> peer
  std::vector<double> samples;  // this rank -> peer, one per timed message
  std::string error;
};

// This rank's host, measured after its first pair (the data interface is known from the group),
// once per run; nullopt until then. Unused when the capacity rule is off.
using CapacityCache = std::optional<HostCapacity>;

// Ping-pong and one-way streams on the pair group; every wait is bounded by ctx.timeout.
// Fills *cap after the first measurement (when the capacity rule is on).
PairMeasure measure_pair(ProbeContext& ctx, const std::string& tag, int peer,
                         const PairwiseOptions& o, CapacityCache* cap) {
  PairMeasure m;
  const int a = std::min(ctx.rank, peer), b = std::max(ctx.rank, peer);
  std::shared_ptr<ProcessGroup> pg;
  try {
    pg = pair_group(ctx, tag, a, b);
  } catch (const std::exception& e) {
    m.error = fmt::format("connecting: {}", e.what());
    return m;
  }
  const int me = pg->rank(), other = 1 - me;
  auto step = [&](std::shared_ptr<Work> w, const char* what) {
    if (!m.error.empty()) return;
    const std::string err = wait_for(*w, ctx.timeout);
    if (!err.empty()) m.error = fmt::format("{} with rank {}: {}", what, peer, err);
  };
  // Buffers live where the group's do (host, or the GPU for nccl); their contents do not matter.
  device::DeviceRuntime& dev = pg->device_runtime();
  device::Buffer token = dev.allocate(sizeof(int64_t));
  TensorView small = dev.view(token.data(), 1, DType::Int64);
  std::vector<double> rtts;
  for (int i = 0; i < o.lat_iters + 2 && m.error.empty(); ++i) {
    const auto t0 = Clock::system().now();
    if (me == 0) {
      step(pg->send(small, other), "latency send");
      step(pg->recv(small, other), "latency recv");
    } else {
      step(pg->recv(small, other), "latency recv");
      step(pg->send(small, other), "latency send");
    }
    if (i >= 2) rtts.push_back(seconds_since(t0) * 1e6);
  }
  if (m.error.empty()) m.lat_us = median(rtts) / 2;
  const size_t big_bytes = static_cast<size_t>(std::max<int64_t>(o.bytes, 1));
  device::Buffer buf = dev.allocate(big_bytes);
  TensorView big = dev.view(buf.data(), big_bytes, DType::UInt8);
  // The directions alternate message by message (0 -> 1, then 1 -> 0, then 0 -> 1 ...), so a
  // burst of competing load slows both alike instead of the one measured while it lasted: the
  // comparison of a direction with its reverse (verdict.h) is then paired. The sender times
  // each message from its send to the receiver's ack, so a sample includes the whole transfer;
  // the first message each way only warms the connection.
  double sent_s = 0;
  const double wait0 = ctx.measure_cpu_wait ? process_cpu_wait_seconds() : -1;
  const auto bw0 = Clock::system().now();
  for (int i = 0; i < o.bw_iters + 1 && m.error.empty(); ++i) {
    for (int dir = 0; dir < 2 && m.error.empty(); ++dir) {
      const bool sender = me == dir;
      const auto ti = Clock::system().now();
      if (sender) {
        step(pg->send(big, other), "bandwidth send");
        step(pg->recv(small, other), "bandwidth ack");
      } else {
        step(pg->recv(big, other), "bandwidth recv");
        step(pg->send(small, other), "bandwidth ack");
      }
      if (i == 0 || !sender || !m.error.empty()) continue;
      const double secs = seconds_since(ti);
      sent_s += secs;
      m.samples.push_back(static_cast<double>(o.bytes) / secs / 1e9);
    }
  }
  if (m.error.empty() && sent_s > 0)
    m.bw_gbps = static_cast<double>(o.bytes) * o.bw_iters / sent_s / 1e9;
  const double wait1 = ctx.measure_cpu_wait ? process_cpu_wait_seconds() : -1;
  const double wall = seconds_since(bw0);
  if (wait0 >= 0 && wait1 >= wait0 && wall > 0) m.cpu_wait = (wait1 - wait0) / wall;
  const std::string store_host = pg->info().store_host;
  destroy_process_group(*pg);
  if (!m.error.empty()) m.samples.clear();
  if (!cap->has_value() && o.capacity_fraction > 0)
    *cap = measure_host_capacity(ctx.backend, ctx.env ? *ctx.env : Env::process(), store_host,
                                 o.bytes, o.bw_iters, ctx.timeout);
  return m;
}

json num(double x) { return std::isnan(x) ? json(nullptr) : json(x); }

json row_entry(int peer, const PairMeasure& m, const CapacityCache& cap) {
  json e{{"peer", peer},         {"lat_us", num(m.lat_us)}, {"bw_gbps", num(m.bw_gbps)},
         {"samples", m.samples}, {"cpu_wait", m.cpu_wait},  {"error", m.error}};
  if (cap) e["capacity"] = capacity_json(*cap);
  return e;
}

// The re-measurement protocol. Round k: rank 0 gives every other rank its own plan in one
// multi_set (key plan/k/RANK: {"peer", "member", "members"}, peer -1 = idle, or {"done": true}),
// so a rank reads one small key per round, never the whole plan. The ranks of the round's pairs
// then publish their entries through collect("res/k"): member 0 is rank 0, the others are
// numbered as the plan says. At the end every rank joins the gather "done", which only rank 0
// waits on.
std::string plan_key(const std::string& tag, int k, int rank) {
  return fmt::format("{}/plan/{}/{}", tag, k, rank);
}
std::string res_key(const std::string& tag, int k) { return fmt::format("{}/res/{}", tag, k); }

// This rank's plan for one round.
struct RankPlan {
  bool done = false;
  int peer = -1;  // -1: idle this round
  int member = 0, members = 1;
};

// Measures with `plan.peer` (if any) and publishes the entry as member `plan.member` of the
// round's collection; returns what rank 0 collects (rank 0 only, its own entry included).
std::vector<std::optional<std::string>> measure_planned(ProbeContext& ctx, const std::string& tag,
                                                        int k, const RankPlan& plan,
                                                        const PairwiseOptions& o,
                                                        CapacityCache* cap) {
  std::string entry;
  if (plan.peer >= 0) {
    const PairMeasure m = measure_pair(ctx, fmt::format("{}/m{}", tag, k), plan.peer, o, cap);
    if (!m.error.empty()) log(LogLevel::Warning, "pairwise: {}", m.error);
    entry = row_entry(plan.peer, m, *cap).dump();
  }
  if (ctx.rank != 0 && plan.peer < 0) return {};
  return collect(*ctx.store, res_key(tag, k), plan.member, plan.members, entry, ctx.timeout * 6);
}

// Every rank but 0: follow rank 0's plans until it says done (or stops publishing).
void follow(ProbeContext& ctx, const std::string& tag, const PairwiseOptions& o,
            CapacityCache* cap) {
  for (int k = 0;; ++k) {
    const std::string key = plan_key(tag, k, ctx.rank);
    try {
      ctx.store->wait({key}, ctx.timeout * 8 + std::chrono::seconds(10));
    } catch (const std::exception& e) {
      log(LogLevel::Warning, "pairwise: rank 0 published no plan {}: {}", k, e.what());
      return;
    }
    const json j = json::parse(ctx.store->get_string(key));
    if (j.value("done", false)) {
      // Rank 0 hosts the store and waits for this before it may exit.
      ctx.store->gather(tag + "/done", ctx.rank, ctx.world, {}, Store::GatherRead::kRoot,
                        ctx.timeout);
      return;
    }
    RankPlan plan;
    plan.peer = j.at("peer").get<int>();
    plan.member = j.value("member", 0);
    plan.members = j.value("members", 1);
    measure_planned(ctx, tag, k, plan, o, cap);
  }
}

// Rank 0: the engine's MeasureRound over the ranks. Units map to their measuring rank.
class Planner {
 public:
  Planner(ProbeContext& ctx, std::string tag, const PairwiseOptions& o, PairwiseResult& r,
          CapacityCache* cap)
      : ctx_(ctx), tag_(std::move(tag)), o_(o), r_(r), cap_(cap) {}

  std::vector<LinkSample> operator()(const std::vector<UnitPair>& pairs) {
    const int k = k_++;
    const auto t0 = Clock::system().now();
    // Members of the round's collection: rank 0 first, then both ends of every pair.
    std::vector<int> member_rank{0};
    std::unordered_map<int, int> peer_of, member_of;
    for (const auto& p : pairs) {
      const int a = r_.unit_rank.at(p.a), b = r_.unit_rank.at(p.b);
      peer_of[a] = b;
      peer_of[b] = a;
      for (int x : {a, b}) {
        if (x == 0) continue;
        member_of[x] = static_cast<int>(member_rank.size());
        member_rank.push_back(x);
      }
    }
    const int members = static_cast<int>(member_rank.size());
    publish(k, [&](int rank) {
      const auto it = peer_of.find(rank);
      if (it == peer_of.end()) return json{{"peer", -1}};
      return json{{"peer", it->second}, {"member", member_of.at(rank)}, {"members", members}};
    });
    RankPlan mine;
    mine.members = members;
    if (const auto it = peer_of.find(0); it != peer_of.end()) mine.peer = it->second;
    const auto collected = measure_planned(ctx_, tag_, k, mine, o_, cap_);
    std::unordered_map<int, json> got;  // rank -> its entry
    for (int m = 0; m < members && m < static_cast<int>(collected.size()); ++m)
      if (collected[m] && !collected[m]->empty()) got[member_rank[m]] = json::parse(*collected[m]);
    const double secs = seconds_since(t0);
    std::vector<LinkSample> out;
    for (const auto& p : pairs) {
      LinkSample s;
      s.a = p.a;
      s.b = p.b;
      s.seconds = secs;
      for (const int unit : {p.a, p.b}) {
        const int rank = r_.unit_rank.at(unit);
        const auto it = got.find(rank);
        if (it == got.end()) {
          if (s.error.empty()) s.error = fmt::format("rank {} did not report", rank);
          continue;
        }
        const json& e = it->second;
        const std::string err = e.at("error").get<std::string>();
        if (!err.empty() && s.error.empty()) s.error = fmt::format("rank {}: {}", rank, err);
        // Each rank times what it sends: unit a's entry is the a -> b direction.
        std::vector<double>& dir = unit == p.a ? s.ab : s.ba;
        for (const auto& x : e.at("samples")) dir.push_back(x.get<double>());
        s.cpu_wait = std::max(s.cpu_wait, e.value("cpu_wait", 0.0));
        if (e.contains("capacity")) {
          HostCapacity& c = unit == p.a ? s.cap_a : s.cap_b;
          c = capacity_from_json(e.at("capacity"));
          r_.capacity.at(unit) = c;
        }
        if (!e.at("lat_us").is_null()) s.lat_us = e.at("lat_us").get<double>();
        const int peer = e.at("peer").get<int>();
        if (!e.at("bw_gbps").is_null() && std::isnan(r_.bw_gbps.at(rank, peer)))
          r_.bw_gbps.set(rank, peer, e.at("bw_gbps").get<double>());
        if (s.lat_us >= 0 && std::isnan(r_.latency_us.at(rank, peer))) {
          r_.latency_us.set(rank, peer, s.lat_us);
          r_.latency_us.set(peer, rank, s.lat_us);
        }
      }
      if (!s.error.empty()) {
        r_.errors.push_back(fmt::format("{} <-> {} (round {}): {}", r_.unit_label(p.a),
                                        r_.unit_label(p.b), k + 1, s.error));
        s.ab.clear();
        s.ba.clear();
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  // Publishes "done" and waits (bounded) until every other rank has read it: rank 0 usually
  // hosts the store, and leaving first would cut the others off before they learn the run ended.
  void finish() {
    if (ctx_.world <= 1) return;
    publish(k_, [](int) { return json{{"done", true}}; });
    const Store::GatherResult g = ctx_.store->gather(tag_ + "/done", 0, ctx_.world, {},
                                                     Store::GatherRead::kRoot, ctx_.timeout * 2);
    if (!g.complete)
      log(LogLevel::Warning, "pairwise: ranks {} did not confirm the end of the run",
          format_ranks(g.missing));
  }

 private:
  // Round k's plan for every rank but 0, in one request.
  void publish(int k, const std::function<json(int)>& plan_of) {
    std::vector<std::string> keys;
    std::vector<Bytes> values;
    keys.reserve(ctx_.world);
    values.reserve(ctx_.world);
    for (int r = 1; r < ctx_.world; ++r) {
      keys.push_back(plan_key(tag_, k, r));
      values.push_back(to_bytes(plan_of(r).dump()));
    }
    if (!keys.empty()) ctx_.store->multi_set(keys, values);
  }

  ProbeContext& ctx_;
  std::string tag_;
  const PairwiseOptions& o_;
  PairwiseResult& r_;
  CapacityCache* cap_;
  int k_ = 0;
};

// The full survey: every pair of ranks, one tournament round at a time (the original probe).
std::string full_survey_row(ProbeContext& ctx, const std::string& tag, const PairwiseOptions& o,
                            size_t* rounds_out, CapacityCache* cap) {
  const int rounds = tournament_round_count(ctx.world);
  *rounds_out = static_cast<size_t>(rounds);
  json row = json::array();
  bool synced = true;
  for (int r = 0; r < rounds; ++r) {
    const std::string rtag = fmt::format("{}/{}", tag, r);
    // Worst case per round: a slow failing connect (2 timeouts) plus the last exchange that
    // fails (1); the rest of the pair's steps then stop at once.
    if (synced) synced = try_barrier(ctx, rtag + "/start", ctx.timeout * 6);
    const int peer = tournament_peer(ctx.world, r, ctx.rank);
    if (peer < 0) continue;
    const PairMeasure m = measure_pair(ctx, rtag, peer, o, cap);
    if (!m.error.empty()) log(LogLevel::Warning, "pairwise: {}", m.error);
    row.push_back(row_entry(peer, m, *cap));
  }
  return row.dump();
}

}  // namespace

PairwiseResult run_pairwise(ProbeContext& ctx, const PairwiseOptions& opts) {
  const auto t0 = Clock::system().now();
  const std::string tag = ctx.tag();
  PairwiseOptions o = opts;
  if (o.rotation < 0) o.rotation = static_cast<int>(std::time(nullptr) % 100003);
  PairwiseResult res;
  CapacityCache cap;
  if (o.schedule == "full") {
    size_t rounds = 0;
    const std::string row = full_survey_row(ctx, tag + "/full", o, &rounds, &cap);
    const auto rows = gather_to_root(ctx, tag + "/rows", row, ctx.timeout * 2);
    if (ctx.rank != 0) {
      follow(ctx, tag, o, &cap);
      return {};
    }
    res = merge_pairwise(ctx.world, ctx.hosts, rows, o);
    Planner plan(ctx, tag, o, res, &cap);
    isolate_result(res, o, std::ref(plan), static_cast<int>(rounds));
    plan.finish();
  } else {
    if (ctx.rank != 0) {
      follow(ctx, tag, o, &cap);
      return {};
    }
    res = merge_pairwise(ctx.world, ctx.hosts, {}, o);
    Planner plan(ctx, tag, o, res, &cap);
    isolate_result(res, o, std::ref(plan), 0);
    plan.finish();
  }
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace collie::probes
