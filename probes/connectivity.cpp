#include "probes/connectivity.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "comm/rendezvous.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/tensor.h"
#include "probes/link_matrix.h"
#include "probes/schedule.h"
#include "stack/init.h"

namespace collie::probes {
namespace {

// A round's worst case is a pair that fails slowly: its store wait and its connect (one
// timeout each) plus the send and the receive (one each); with slack for teardown, rounds are
// kept together as long as every rank arrives within this many timeouts.
constexpr int kRoundBudget = 6;

struct PeerView {
  bool ok = true;
  double best_rtt_us = -1;
  std::string error;
};

// One round trip with `peer` on a fresh pair group; returns "" or the error.
std::string round_trip(ProbeContext& ctx, const std::string& tag, int peer, double* rtt_us) {
  const int a = std::min(ctx.rank, peer), b = std::max(ctx.rank, peer);
  std::shared_ptr<ProcessGroup> pg;
  try {
    pg = pair_group(ctx, tag, a, b);
  } catch (const std::exception& e) {
    return fmt::format("connecting: {}", e.what());
  }
  // The message lives where the group's buffers live (host, or the GPU for nccl).
  int64_t msg = ctx.rank;
  device::DeviceRuntime& dev = pg->device_runtime();
  device::Buffer buf = dev.allocate(sizeof msg);
  dev.copy_to_device(buf.data(), &msg, sizeof msg);
  TensorView t = dev.view(buf.data(), 1, DType::Int64);
  const int other = pg->rank() == 0 ? 1 : 0;
  std::string err;
  const auto start = Clock::system().now();
  if (pg->rank() == 0) {
    err = wait_for(*pg->send(t, other), ctx.timeout);
    if (err.empty()) err = wait_for(*pg->recv(t, other), ctx.timeout);
  } else {
    err = wait_for(*pg->recv(t, other), ctx.timeout);
    if (err.empty()) err = wait_for(*pg->send(t, other), ctx.timeout);
  }
  *rtt_us = std::chrono::duration<double, std::micro>(Clock::system().now() - start).count();
  if (err.empty()) dev.copy_to_host(&msg, buf.data(), sizeof msg);
  const int64_t expect = pg->rank() == 0 ? ctx.rank : peer;
  if (err.empty() && msg != expect)
    err = fmt::format("round trip carried {} instead of rank {} (corrupted message)", msg, expect);
  destroy_process_group(*pg);
  return err;
}

}  // namespace

namespace {

// Up to this many broken pairs the text and the findings name each one (what a test of 8 ranks
// reads); beyond, by host pair.
constexpr size_t kPairsOneByOne = 64;
constexpr size_t kListMax = 16;

using json = nlohmann::json;

std::string pair_text(const PairStatus& p, const std::vector<std::string>& hosts) {
  return fmt::format("{} ({}) <-> {} ({})", p.a, hosts.at(p.a), p.b, hosts.at(p.b));
}

}  // namespace

std::string connectivity_row(const std::vector<PeerResult>& peers, double report_rtt_us) {
  json failed = json::array(), slow = json::array();
  std::vector<double> rtts;
  double lo = -1, hi = -1;
  int hi_peer = -1;
  for (const auto& p : peers) {
    if (!p.ok) {
      failed.push_back({{"peer", p.peer}, {"error", p.error}});
      continue;
    }
    if (p.rtt_us < 0) continue;
    rtts.push_back(p.rtt_us);
    if (lo < 0 || p.rtt_us < lo) lo = p.rtt_us;
    if (p.rtt_us > hi) {
      hi = p.rtt_us;
      hi_peer = p.peer;
    }
    if (report_rtt_us > 0 && p.rtt_us > report_rtt_us)
      slow.push_back({{"peer", p.peer}, {"rtt_us", p.rtt_us}});
  }
  return json{{"ok_peers", rtts.size()},
              {"rtt_us", {lo, rtts.empty() ? -1.0 : median(rtts), hi}},
              {"max_peer", hi_peer},
              {"failed", failed},
              {"slow", slow}}
      .dump();
}

std::vector<std::string> ConnectivityResult::isolated_hosts() const {
  const HostIndex index(hosts);
  std::unordered_map<std::string, int64_t> broken_cross;
  for (const auto& p : broken_pairs) {
    if (hosts.at(p.a) == hosts.at(p.b)) continue;
    ++broken_cross[hosts.at(p.a)];
    ++broken_cross[hosts.at(p.b)];
  }
  std::vector<std::string> out;
  for (const auto& [h, n] : broken_cross) {
    // Every rank of h with every rank elsewhere: all of them broken.
    const int64_t here = static_cast<int64_t>(index.ranks(h).size());
    if (n > 0 && n == here * (world - here)) out.push_back(h);
  }
  std::sort(out.begin(), out.end());
  for (auto& h : out) h = index.label(h);
  return out;
}

nlohmann::json ConnectivityResult::to_json() const {
  json j;
  j["probe"] = "connectivity";
  j["world_size"] = world;
  j["hosts"] = hosts;
  j["all_reachable"] = all_reachable();
  j["missing_ranks"] = missing_ranks;
  j["pairs"] = pair_count;
  if (world <= kHeatMapFullRows) {
    auto& matrix = j["reachable"];
    for (int i = 0; i < world; ++i) matrix.push_back(std::vector<int>(world, 1));
    for (const auto& p : broken_pairs) matrix[p.a][p.b] = matrix[p.b][p.a] = 0;
  }
  j["broken_pairs"] = json::array();
  for (const auto& p : broken_pairs) {
    j["broken_pairs"].push_back({{"a", p.a},
                                 {"b", p.b},
                                 {"host_a", hosts.at(p.a)},
                                 {"host_b", hosts.at(p.b)},
                                 {"error", p.error}});
  }
  j["slow_pairs"] = json::array();
  for (const auto& p : slow_pairs)
    j["slow_pairs"].push_back({{"a", p.a}, {"b", p.b}, {"rtt_us", p.rtt_us}});
  j["rtt_us"] = {{"min", rtt_min_us},
                 {"median", rtt_median_us},
                 {"max", rtt_max_us},
                 {"max_pair", {rtt_max_a, rtt_max_b}}};
  j["isolated_hosts"] = isolated_hosts();
  return j;
}

std::string ConnectivityResult::to_text() const {
  std::string out = fmt::format("# connectivity: {} ranks on {} hosts\n", world,
                                std::set<std::string>(hosts.begin(), hosts.end()).size());
  if (world <= kHeatMapFullRows) {
    std::set<int> missing(missing_ranks.begin(), missing_ranks.end());
    std::set<std::pair<int, int>> bad;
    for (const auto& p : broken_pairs) bad.insert({p.a, p.b});
    out += "#      ";
    for (int j = 0; j < world; ++j) out += fmt::format("{:>2}", j % 100);
    out += "\n";
    for (int i = 0; i < world; ++i) {
      out += fmt::format("# {:>4} ", i);
      for (int j = 0; j < world; ++j) {
        const char c = i == j ? '\\' : bad.count({std::min(i, j), std::max(i, j)}) ? 'X' : '.';
        out += ' ';
        out += missing.count(i) && i != j && c == '.' ? '?' : c;
      }
      out += fmt::format("  {}\n", hosts.at(i));
    }
    out += "#        '.' reachable, 'X' broken, '?' rank did not report\n";
  }
  if (rtt_min_us >= 0)
    out += fmt::format(
        "# round trips: fastest {:.0f} us, median {:.0f} us (of the ranks' medians), slowest "
        "{:.0f} us ({} <-> {})\n",
        rtt_min_us, rtt_median_us, rtt_max_us, rtt_max_a, rtt_max_b);
  if (!missing_ranks.empty())
    out += fmt::format(
        "MISSING: ranks {} did not report within the deadline (check those "
        "processes and their store connection)\n",
        format_ranks(missing_ranks));
  if (broken_pairs.empty() && missing_ranks.empty()) {
    out += fmt::format("OK: all {} pairs reachable\n", pair_count);
    return out;
  }
  out += fmt::format("BROKEN: {} of {} pairs\n", broken_pairs.size(), pair_count);
  for (const auto& h : isolated_hosts())
    out += fmt::format("  host {} reaches no other host: check its link\n", h);
  if (broken_pairs.size() <= kPairsOneByOne) {
    for (const auto& p : broken_pairs)
      out += fmt::format("  {}: {}\n", pair_text(p, hosts), p.error);
    return out;
  }
  // By host pair, the pairs with the most broken rank pairs first.
  std::map<std::pair<std::string, std::string>, std::pair<int, const PairStatus*>> by;
  for (const auto& p : broken_pairs) {
    auto& e = by[{std::min(hosts.at(p.a), hosts.at(p.b)), std::max(hosts.at(p.a), hosts.at(p.b))}];
    if (e.first++ == 0) e.second = &p;
  }
  // The host pairs that an isolated host does not explain come first (a bad link among a dead
  // host's N broken pairs), then the most broken rank pairs.
  std::set<std::string> gone;
  for (const auto& h : isolated_hosts()) gone.insert(h.substr(0, h.find(" (")));
  std::vector<std::tuple<bool, int, std::pair<std::string, std::string>>> order;
  for (const auto& [k, e] : by)
    order.push_back({gone.count(k.first) || gone.count(k.second), -e.first, k});
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size() && i < kListMax; ++i) {
    const auto& k = std::get<2>(order[i]);
    const auto& e = by.at(k);
    out += fmt::format("  {} <-> {}: {} broken pair(s), first {}: {}\n", k.first, k.second, e.first,
                       pair_text(*e.second, hosts), e.second->error);
  }
  if (order.size() > kListMax)
    out +=
        fmt::format("  ... and {} more host pair(s) with broken pairs (every pair in the JSON)\n",
                    order.size() - kListMax);
  return out;
}

ConnectivityResult merge_connectivity(int world, const std::vector<std::string>& hosts,
                                      const std::vector<std::optional<std::string>>& rows) {
  ConnectivityResult res;
  res.world = world;
  res.hosts = hosts;
  res.pair_count = static_cast<int64_t>(world) * (world - 1) / 2;
  std::map<std::pair<int, int>, PairStatus> broken;
  struct Listed {
    int times = 0;
    double rtt = -1;
  };
  std::map<std::pair<int, int>, Listed> listed;  // ok pairs a side listed as slow
  std::vector<double> medians;
  for (int r = 0; r < world; ++r) {
    if (!rows.at(r)) {
      res.missing_ranks.push_back(r);
      continue;
    }
    const json row = json::parse(*rows[r]);
    for (const auto& e : row.at("failed")) {
      const int peer = e.at("peer").get<int>();
      auto [it, fresh] = broken.try_emplace({std::min(r, peer), std::max(r, peer)});
      if (fresh)
        it->second = PairStatus{std::min(r, peer), std::max(r, peer), false, -1,
                                fmt::format("rank {}: {}", r, e.at("error").get<std::string>())};
    }
    for (const auto& e : row.at("slow")) {
      const int peer = e.at("peer").get<int>();
      Listed& l = listed[{std::min(r, peer), std::max(r, peer)}];
      const double rtt = e.at("rtt_us").get<double>();
      ++l.times;
      if (l.rtt < 0 || rtt < l.rtt) l.rtt = rtt;
    }
    const auto& rtt = row.at("rtt_us");
    if (row.at("ok_peers").get<int64_t>() == 0 || rtt.at(0).get<double>() < 0) continue;
    medians.push_back(rtt.at(1).get<double>());
    if (res.rtt_min_us < 0 || rtt.at(0).get<double>() < res.rtt_min_us)
      res.rtt_min_us = rtt.at(0).get<double>();
    if (rtt.at(2).get<double>() > res.rtt_max_us) {
      res.rtt_max_us = rtt.at(2).get<double>();
      const int peer = row.at("max_peer").get<int>();
      res.rtt_max_a = std::min(r, peer);
      res.rtt_max_b = std::max(r, peer);
    }
  }
  if (!medians.empty()) res.rtt_median_us = median(medians);
  // Pairs of two ranks that did not report: nobody saw them work.
  for (size_t i = 0; i < res.missing_ranks.size(); ++i)
    for (size_t k = i + 1; k < res.missing_ranks.size(); ++k) {
      const int a = res.missing_ranks[i], b = res.missing_ranks[k];
      broken[{a, b}] = PairStatus{a, b, false, -1, "neither rank reported"};
    }
  for (auto& [k, p] : broken) res.broken_pairs.push_back(std::move(p));
  // Slow: every end that reported listed it (its best round trip is above the limit).
  for (const auto& [k, l] : listed) {
    if (broken.count(k)) continue;
    const int reported = (rows.at(k.first) ? 1 : 0) + (rows.at(k.second) ? 1 : 0);
    if (l.times < reported) continue;
    res.slow_pairs.push_back(PairStatus{k.first, k.second, true, l.rtt, ""});
  }
  return res;
}

ConnectivityResult run_connectivity(ProbeContext& ctx, const ConnectivityOptions& opts) {
  const std::string tag = ctx.tag();
  const int rounds = tournament_round_count(ctx.world);
  std::map<int, PeerView> view;
  bool synced = true;
  for (int rep = 0; rep < std::max(1, opts.rounds); ++rep) {
    if (rep > 0 && opts.interval.count() > 0) std::this_thread::sleep_for(opts.interval);
    for (int r = 0; r < rounds; ++r) {
      // Rounds start together so a pair's ends meet within the deadline even after a slow
      // round; a rank that stopped reporting makes later rounds run unsynchronized instead.
      const std::string rtag = fmt::format("{}/{}/{}", tag, rep, r);
      if (synced) synced = try_barrier(ctx, rtag + "/start", kRoundBudget * ctx.timeout);
      const int peer = tournament_peer(ctx.world, r, ctx.rank);
      if (peer < 0) continue;
      PeerView& v = view[peer];
      if (!v.ok) continue;  // the pair's state is unknown after a failure; do not reuse it
      double rtt = 0;
      const std::string err = round_trip(ctx, rtag, peer, &rtt);
      if (!err.empty()) {
        v.ok = false;
        v.error = err;
        log(LogLevel::Warning, "connectivity: rank {} <-> {} failed: {}", ctx.rank, peer, err);
      } else if (v.best_rtt_us < 0 || rtt < v.best_rtt_us) {
        v.best_rtt_us = rtt;
      }
    }
    if (ctx.rank == 0) {
      std::fprintf(stderr, "# connectivity: pass %d/%d done\n", rep + 1, std::max(1, opts.rounds));
      std::fflush(stderr);
    }
  }
  std::vector<PeerResult> peers;
  peers.reserve(view.size());
  for (const auto& [peer, v] : view) peers.push_back({peer, v.ok, v.best_rtt_us, v.error});
  const std::string row = connectivity_row(peers, opts.report_rtt_us);
  const auto rows = gather_to_root(ctx, tag + "/rows", row, ctx.timeout * 2);
  if (ctx.rank != 0) return {};
  return merge_connectivity(ctx.world, ctx.hosts, rows);
}

}  // namespace collie::probes
