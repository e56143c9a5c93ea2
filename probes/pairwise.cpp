#include "probes/pairwise.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "comm/init.h"
#include "comm/rendezvous.h"
#include "core/log.h"
#include "core/tensor.h"
#include "probes/schedule.h"

namespace collie::probes {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct PairMeasure {
  double lat_us = NAN;
  double bw_gbps = NAN;  // this rank -> peer
  std::string error;
};

// Ping-pong and one-way streams on the pair group; every wait is bounded by ctx.timeout.
PairMeasure measure_pair(ProbeContext& ctx, const std::string& tag, int peer,
                         const PairwiseOptions& o) {
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
  int64_t token = 0;
  TensorView small = TensorView::cpu(&token, 1, DType::Int64);
  std::vector<double> rtts;
  for (int i = 0; i < o.lat_iters + 2 && m.error.empty(); ++i) {
    const auto t0 = Clock::now();
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
  std::vector<uint8_t> buf(static_cast<size_t>(std::max<int64_t>(o.bytes, 1)));
  TensorView big = TensorView::cpu(buf.data(), buf.size(), DType::UInt8);
  // Direction 0 -> 1 first, then 1 -> 0; the sender times from its first send to the ack of
  // the last message, so the time includes the whole transfer.
  for (int dir = 0; dir < 2 && m.error.empty(); ++dir) {
    const bool sender = me == dir;
    auto t0 = Clock::now();
    for (int i = 0; i < o.bw_iters + 1 && m.error.empty(); ++i) {
      if (sender) {
        step(pg->send(big, other), "bandwidth send");
        step(pg->recv(small, other), "bandwidth ack");
      } else {
        step(pg->recv(big, other), "bandwidth recv");
        step(pg->send(small, other), "bandwidth ack");
      }
      if (i == 0) t0 = Clock::now();  // the first message only warms the connection
    }
    if (sender && m.error.empty())
      m.bw_gbps = static_cast<double>(o.bytes) * o.bw_iters / seconds_since(t0) / 1e9;
  }
  destroy_process_group(*pg);
  return m;
}

}  // namespace

std::vector<Deviation> PairwiseResult::slow_links() const {
  std::vector<Deviation> out;
  for (const auto& d : links())
    if (d.deviation <= -slow_threshold) out.push_back(d);
  return out;
}

std::vector<Deviation> PairwiseResult::slow_hosts() const {
  std::vector<Deviation> out;
  for (auto d : host_scores()) {
    if (d.deviation > -slow_threshold) continue;
    d.name = host_label(d.name, hosts);
    out.push_back(d);
  }
  return out;
}

namespace {
nlohmann::json matrix_json(const RankMatrix& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (int i = 0; i < m.size(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int j = 0; j < m.size(); ++j) {
      if (std::isnan(m.at(i, j)))
        row.push_back(nullptr);
      else
        row.push_back(m.at(i, j));
    }
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json deviations_json(const std::vector<Deviation>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : v) {
    nlohmann::json e{{"name", d.name}, {"value", d.value}, {"deviation", d.deviation}};
    if (d.a >= 0) {
      e["from"] = d.a;
      e["to"] = d.b;
    }
    out.push_back(e);
  }
  return out;
}
}  // namespace

nlohmann::json PairwiseResult::to_json() const {
  nlohmann::json j;
  j["probe"] = "pairwise";
  j["world_size"] = world;
  j["hosts"] = hosts;
  j["bytes"] = bytes;
  j["slow_threshold"] = slow_threshold;
  j["bandwidth_gbps"] = matrix_json(bw_gbps);
  j["latency_us"] = matrix_json(latency_us);
  j["median_cross_host_gbps"] = [&] {
    std::vector<double> v;
    for (const auto& d : host_scores()) v.push_back(d.value);
    return median(v);
  }();
  j["host_scores"] = deviations_json(host_scores());
  j["slow_hosts"] = deviations_json(slow_hosts());
  j["slow_links"] = deviations_json(slow_links());
  j["errors"] = errors;
  j["missing_ranks"] = missing_ranks;
  return j;
}

std::string PairwiseResult::to_text() const {
  std::string out =
      fmt::format("# pairwise: {} ranks, {} bytes per bandwidth message\n", world, bytes);
  out += "# bandwidth (GB/s, row = sender, column = receiver)\n";
  out += heat_map(bw_gbps, true, "GB/s");
  out += "# latency (us, one way)\n";
  out += heat_map(latency_us, false, "us");
  const auto ls = links();
  out += "# slowest links (deviation from the median cross-host link)\n";
  for (size_t i = 0; i < ls.size() && i < 5; ++i)
    out += fmt::format("#   {:<32} {:10.4f} GB/s  {:+.0f}%\n", ls[i].name, ls[i].value,
                       ls[i].deviation * 100);
  out += "# hosts (median of cross-host links)\n";
  for (const auto& h : host_scores())
    out += fmt::format("#   {:<32} {:10.4f} GB/s  {:+.0f}%\n", host_label(h.name, hosts), h.value,
                       h.deviation * 100);
  for (const auto& e : errors) out += fmt::format("FAILED PAIR: {}\n", e);
  if (!missing_ranks.empty())
    out += fmt::format("MISSING: ranks {} did not report\n", format_ranks(missing_ranks));
  const auto sh = slow_hosts();
  const auto sl = slow_links();
  for (const auto& h : sh)
    out += fmt::format("SLOW HOST: {} at {:.4f} GB/s, {:.0f}% below the median host\n", h.name,
                       h.value, -h.deviation * 100);
  if (sh.empty() && !sl.empty()) {
    for (const auto& l : sl)
      out += fmt::format("SLOW LINK: {} at {:.4f} GB/s, {:.0f}% below the median link\n", l.name,
                         l.value, -l.deviation * 100);
  }
  if (sh.empty() && sl.empty() && errors.empty() && missing_ranks.empty())
    out += fmt::format("OK: no link more than {:.0f}% below the median\n", slow_threshold * 100);
  return out;
}

PairwiseResult merge_pairwise(int world, const std::vector<std::string>& hosts,
                              const std::vector<std::optional<std::string>>& rows,
                              const PairwiseOptions& opts) {
  PairwiseResult res;
  res.world = world;
  res.hosts = hosts;
  res.bytes = opts.bytes;
  res.slow_threshold = opts.slow_threshold;
  res.bw_gbps = RankMatrix(world);
  res.latency_us = RankMatrix(world);
  for (int r = 0; r < world; ++r) {
    if (!rows.at(r)) {
      res.missing_ranks.push_back(r);
      continue;
    }
    for (const auto& e : nlohmann::json::parse(*rows[r])) {
      const int peer = e.at("peer").get<int>();
      if (!e.at("error").get<std::string>().empty()) {
        if (r < peer || !rows.at(peer))
          res.errors.push_back(fmt::format("{} ({}) <-> {} ({}): rank {}: {}", r, hosts.at(r), peer,
                                           hosts.at(peer), r, e.at("error").get<std::string>()));
        continue;
      }
      if (!e.at("bw_gbps").is_null()) res.bw_gbps.set(r, peer, e.at("bw_gbps").get<double>());
      if (!e.at("lat_us").is_null()) {
        const double lat = e.at("lat_us").get<double>();
        res.latency_us.set(r, peer, lat);
        if (std::isnan(res.latency_us.at(peer, r))) res.latency_us.set(peer, r, lat);
      }
    }
  }
  return res;
}

PairwiseResult run_pairwise(ProbeContext& ctx, const PairwiseOptions& opts) {
  const std::string tag = ctx.tag();
  const auto rounds = tournament_rounds(ctx.world);
  nlohmann::json row = nlohmann::json::array();
  bool synced = true;
  for (size_t r = 0; r < rounds.size(); ++r) {
    const std::string rtag = fmt::format("{}/{}", tag, r);
    // Worst case per round: a slow failing connect (2 timeouts) plus the last exchange that
    // fails (1); the rest of the pair's steps then stop at once.
    if (synced) synced = try_barrier(ctx, rtag + "/start", ctx.timeout * 6);
    const int peer = peer_in_round(rounds[r], ctx.rank);
    if (peer < 0) continue;
    const PairMeasure m = measure_pair(ctx, rtag, peer, opts);
    if (!m.error.empty()) log(LogLevel::Warning, "pairwise: {}", m.error);
    auto num = [](double x) { return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x); };
    row.push_back({{"peer", peer},
                   {"lat_us", num(m.lat_us)},
                   {"bw_gbps", num(m.bw_gbps)},
                   {"error", m.error}});
  }
  const auto rows = gather_to_root(ctx, tag + "/rows", row.dump(), ctx.timeout * 2);
  if (ctx.rank != 0) return {};
  return merge_pairwise(ctx.world, ctx.hosts, rows, opts);
}

}  // namespace collie::probes
