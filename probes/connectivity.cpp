#include "probes/connectivity.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

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

std::vector<PairStatus> ConnectivityResult::broken() const {
  std::vector<PairStatus> out;
  for (const auto& p : pairs)
    if (!p.ok) out.push_back(p);
  return out;
}

std::vector<std::string> ConnectivityResult::isolated_hosts() const {
  std::map<std::string, std::pair<int, int>> count;  // host -> (cross pairs, broken)
  for (const auto& p : pairs) {
    if (hosts.at(p.a) == hosts.at(p.b)) continue;
    for (int r : {p.a, p.b}) {
      count[hosts.at(r)].first++;
      if (!p.ok) count[hosts.at(r)].second++;
    }
  }
  std::vector<std::string> out;
  for (const auto& [h, c] : count)
    if (c.first > 0 && c.first == c.second) out.push_back(host_label(h, hosts));
  return out;
}

nlohmann::json ConnectivityResult::to_json() const {
  nlohmann::json j;
  j["probe"] = "connectivity";
  j["world_size"] = world;
  j["hosts"] = hosts;
  j["all_reachable"] = all_reachable();
  j["missing_ranks"] = missing_ranks;
  auto& matrix = j["reachable"];
  for (int i = 0; i < world; ++i) matrix.push_back(std::vector<int>(world, 1));
  for (const auto& p : pairs) {
    matrix[p.a][p.b] = p.ok ? 1 : 0;
    matrix[p.b][p.a] = p.ok ? 1 : 0;
  }
  j["broken_pairs"] = nlohmann::json::array();
  for (const auto& p : broken()) {
    j["broken_pairs"].push_back({{"a", p.a},
                                 {"b", p.b},
                                 {"host_a", hosts.at(p.a)},
                                 {"host_b", hosts.at(p.b)},
                                 {"error", p.error}});
  }
  j["isolated_hosts"] = isolated_hosts();
  return j;
}

std::string ConnectivityResult::to_text() const {
  std::set<int> missing(missing_ranks.begin(), missing_ranks.end());
  std::vector<std::vector<char>> m(world, std::vector<char>(world, '.'));
  for (int i = 0; i < world; ++i) m[i][i] = '\\';
  for (const auto& p : pairs) m[p.a][p.b] = m[p.b][p.a] = p.ok ? '.' : 'X';
  std::string out = fmt::format("# connectivity: {} ranks on {} hosts\n", world,
                                std::set<std::string>(hosts.begin(), hosts.end()).size());
  out += "#      ";
  for (int j = 0; j < world; ++j) out += fmt::format("{:>2}", j % 100);
  out += "\n";
  for (int i = 0; i < world; ++i) {
    out += fmt::format("# {:>4} ", i);
    for (int j = 0; j < world; ++j) {
      out += ' ';
      out += missing.count(i) && i != j && m[i][j] == '.' ? '?' : m[i][j];
    }
    out += fmt::format("  {}\n", hosts.at(i));
  }
  out += "#        '.' reachable, 'X' broken, '?' rank did not report\n";
  if (!missing_ranks.empty())
    out += fmt::format(
        "MISSING: ranks {} did not report within the deadline (check those "
        "processes and their store connection)\n",
        format_ranks(missing_ranks));
  const auto bad = broken();
  if (bad.empty() && missing_ranks.empty()) {
    out += fmt::format("OK: all {} pairs reachable\n", pairs.size());
    return out;
  }
  out += fmt::format("BROKEN: {} of {} pairs\n", bad.size(), pairs.size());
  for (const auto& p : bad)
    out +=
        fmt::format("  {} ({}) <-> {} ({}): {}\n", p.a, hosts.at(p.a), p.b, hosts.at(p.b), p.error);
  for (const auto& h : isolated_hosts())
    out += fmt::format("  host {} reaches no other host: check its link\n", h);
  return out;
}

ConnectivityResult merge_connectivity(int world, const std::vector<std::string>& hosts,
                                      const std::vector<std::optional<std::string>>& rows) {
  ConnectivityResult res;
  res.world = world;
  res.hosts = hosts;
  std::map<std::pair<int, int>, PairStatus> pairs;
  for (int a = 0; a < world; ++a)
    for (int b = a + 1; b < world; ++b) pairs[{a, b}] = PairStatus{a, b, true, -1, ""};
  for (int r = 0; r < world; ++r) {
    if (!rows.at(r)) {
      res.missing_ranks.push_back(r);
      continue;
    }
    const auto row = nlohmann::json::parse(*rows[r]);
    for (const auto& e : row) {
      const int peer = e.at("peer").get<int>();
      auto& p = pairs.at({std::min(r, peer), std::max(r, peer)});
      if (!e.at("ok").get<bool>()) {
        if (p.ok) p.error = fmt::format("rank {}: {}", r, e.at("error").get<std::string>());
        p.ok = false;
      } else {
        const double rtt = e.at("rtt_us").get<double>();
        if (p.rtt_us < 0 || rtt < p.rtt_us) p.rtt_us = rtt;
      }
    }
  }
  for (auto& [k, p] : pairs) {
    const bool a_missing = !rows.at(p.a), b_missing = !rows.at(p.b);
    if (a_missing && b_missing) {
      p.ok = false;
      p.error = "neither rank reported";
    }
    res.pairs.push_back(p);
  }
  return res;
}

ConnectivityResult run_connectivity(ProbeContext& ctx, const ConnectivityOptions& opts) {
  const std::string tag = ctx.tag();
  const auto rounds = tournament_rounds(ctx.world);
  std::map<int, PeerView> view;
  bool synced = true;
  for (int rep = 0; rep < std::max(1, opts.rounds); ++rep) {
    if (rep > 0 && opts.interval.count() > 0) std::this_thread::sleep_for(opts.interval);
    for (size_t r = 0; r < rounds.size(); ++r) {
      // Rounds start together so a pair's ends meet within the deadline even after a slow
      // round; a rank that stopped reporting makes later rounds run unsynchronized instead.
      const std::string rtag = fmt::format("{}/{}/{}", tag, rep, r);
      if (synced) synced = try_barrier(ctx, rtag + "/start", kRoundBudget * ctx.timeout);
      const int peer = peer_in_round(rounds[r], ctx.rank);
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
  nlohmann::json row = nlohmann::json::array();
  for (const auto& [peer, v] : view)
    row.push_back({{"peer", peer}, {"ok", v.ok}, {"rtt_us", v.best_rtt_us}, {"error", v.error}});
  const auto rows = gather_to_root(ctx, tag + "/rows", row.dump(), ctx.timeout * 2);
  if (ctx.rank != 0) return {};
  return merge_connectivity(ctx.world, ctx.hosts, rows);
}

}  // namespace collie::probes
