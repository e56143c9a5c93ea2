#include "debug_server/cluster.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "store/store.h"

namespace collie {
namespace {

struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  int remaining = 0;
  std::vector<RankView> results;
};

RankView fetch_one(int rank, const std::string& url, Millis timeout, const std::string& token) {
  RankView v;
  v.rank = rank;
  v.url = url;
  try {
    httplib::Client cli(url);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
    cli.set_connection_timeout(us / 1000000, us % 1000000);
    cli.set_read_timeout(us / 1000000, us % 1000000);
    cli.set_write_timeout(us / 1000000, us % 1000000);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    auto res = cli.Get("/v1/status", headers);
    if (!res) {
      v.error = fmt::format("{} ({})", httplib::to_string(res.error()), url);
    } else if (res->status != 200) {
      v.error = fmt::format("HTTP {} from {}", res->status, url);
    } else {
      v.status = nlohmann::json::parse(res->body);
      v.reachable = true;
    }
  } catch (const std::exception& e) {
    v.error = fmt::format("bad answer from {}: {}", url, e.what());
  }
  return v;
}

}  // namespace

ClusterView fetch_cluster(Store& store, int world_size, Millis per_rank_timeout,
                          const std::string& token, int self_rank, nlohmann::json self) {
  const auto t0 = std::chrono::steady_clock::now();
  ClusterView view;
  view.world_size = world_size;
  auto pending = std::make_shared<Pending>();
  pending->results.resize(world_size);
  std::vector<std::pair<int, std::string>> targets;
  for (int r = 0; r < world_size; ++r) {
    RankView& v = pending->results[r];
    v.rank = r;
    if (r == self_rank) {
      v.reachable = true;
      v.status = std::move(self);
      v.url = v.status.value("url", "");
      continue;
    }
    const std::string key = fmt::format("debug_server/{}", r);
    try {
      // check() never waits, so a rank that never started its server costs nothing.
      if (!store.check({key})) {
        v.error = "no address in the store (debug server not started on that rank?)";
        continue;
      }
      targets.emplace_back(r, store.get_string(key));
    } catch (const std::exception& e) {
      v.error = fmt::format("store lookup of {} failed: {}", key, e.what());
    }
  }
  pending->remaining = static_cast<int>(targets.size());
  for (const auto& [rank, url] : targets) {
    pending->results[rank].url = url;
    std::thread([pending, rank = rank, url = url, per_rank_timeout, token] {
      RankView v = fetch_one(rank, url, per_rank_timeout, token);
      std::lock_guard<std::mutex> lock(pending->mu);
      if (pending->results[rank].error.empty()) pending->results[rank] = std::move(v);
      --pending->remaining;
      pending->cv.notify_all();
    }).detach();
  }
  {
    std::unique_lock<std::mutex> lock(pending->mu);
    const auto deadline = t0 + per_rank_timeout + std::chrono::milliseconds(200);
    pending->cv.wait_until(lock, deadline, [&] { return pending->remaining == 0; });
    for (auto& v : pending->results) {
      if (!v.reachable && v.error.empty()) {
        v.error = fmt::format("no answer from {} within {} ms", v.url, per_rank_timeout.count());
      }
    }
    view.ranks = pending->results;  // copy: late workers may still write into pending
  }
  view.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return view;
}

nlohmann::json analyze_cluster(const ClusterView& view, double stall_after_s) {
  struct RankState {
    int severity = 0;  // 0 ok, 1 behind, 2 stalled, 3 straggler, 4 unreachable
    std::vector<std::string> reasons;
  };
  static constexpr const char* kStates[] = {"ok", "behind", "stalled", "straggler", "unreachable"};
  std::vector<RankState> st(view.ranks.size());
  nlohmann::json findings = nlohmann::json::array();
  std::vector<int> unreachable;
  auto raise = [&](int r, int sev, std::string why) {
    st[r].severity = std::max(st[r].severity, sev);
    st[r].reasons.push_back(std::move(why));
  };
  // Group the ranks' views of each process group by pg id.
  struct Member {
    int rank;
    const nlohmann::json* g;
  };
  std::map<std::string, std::vector<Member>> pgs;
  for (const auto& v : view.ranks) {
    if (!v.reachable) {
      unreachable.push_back(v.rank);
      raise(v.rank, 4, "unreachable: " + v.error);
      continue;
    }
    // Pointers into v.status (which outlives `pgs`), never into a temporary copy.
    auto groups = v.status.find("groups");
    if (groups == v.status.end() || !groups->is_array()) continue;
    for (const auto& g : *groups) pgs[g.value("pg", "?")].push_back({v.rank, &g});
  }
  if (!unreachable.empty()) {
    findings.push_back(fmt::format("Ranks not reachable (their status is unknown): {}",
                                   fmt::join(unreachable, ", ")));
  }
  for (const auto& [pg, members] : pgs) {
    uint64_t max_started = 0, max_completed = 0;
    std::string newest_op;
    for (const auto& m : members) {
      max_started = std::max<uint64_t>(max_started, m.g->value("last_enqueued_seq", 0ull));
      max_completed = std::max<uint64_t>(max_completed, m.g->value("last_completed_seq", 0ull));
    }
    for (const auto& m : members) {
      for (const auto& op : m.g->value("inflight", nlohmann::json::array())) {
        if (op.value("seq", 0ull) == max_started && !op.value("p2p", false)) {
          newest_op = op.value("op", "");
        }
      }
    }
    std::vector<int> missing;
    for (const auto& m : members) {
      const uint64_t started = m.g->value("last_enqueued_seq", 0ull);
      const uint64_t completed = m.g->value("last_completed_seq", 0ull);
      if (started < max_started) {
        missing.push_back(m.rank);
        raise(
            m.rank, 3,
            fmt::format("pg {}: has not joined {}#{} (last started #{}, last completed #{})", pg,
                        newest_op.empty() ? "" : newest_op + " ", max_started, started, completed));
      } else if (completed < max_completed) {
        raise(m.rank, 1,
              fmt::format("pg {}: last completed #{} while others completed #{}", pg, completed,
                          max_completed));
      }
      for (const auto& op : m.g->value("inflight", nlohmann::json::array())) {
        const double age = op.value("age_s", 0.0);
        if (age >= stall_after_s) {
          raise(m.rank, 2,
                fmt::format("pg {}: {} #{} in flight for {:.1f} s", pg, op.value("op", "?"),
                            op.value("seq", 0ull), age));
        }
      }
    }
    if (!missing.empty()) {
      findings.push_back(fmt::format(
          "Not all ranks joining collective, sequence number: {} (pg {}{}): missing ranks {}",
          max_started, pg, newest_op.empty() ? "" : ", " + newest_op, fmt::join(missing, ", ")));
    }
  }
  nlohmann::json ranks = nlohmann::json::array();
  int bad = 0;
  for (size_t r = 0; r < st.size(); ++r) {
    bad += st[r].severity > 0 ? 1 : 0;
    ranks.push_back({{"rank", r}, {"state", kStates[st[r].severity]}, {"reasons", st[r].reasons}});
  }
  const std::string summary = bad == 0
                                  ? fmt::format("all {} ranks in step", st.size())
                                  : fmt::format("{} of {} ranks need attention", bad, st.size());
  return {{"ranks", std::move(ranks)},
          {"findings", std::move(findings)},
          {"unreachable", unreachable},
          {"summary", summary}};
}

nlohmann::json cluster_json(const ClusterView& view, const nlohmann::json& analysis) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& v : view.ranks) {
    nlohmann::json r = {{"rank", v.rank},
                        {"reachable", v.reachable},
                        {"url", v.url},
                        {"state", analysis["ranks"][v.rank]["state"]},
                        {"reasons", analysis["ranks"][v.rank]["reasons"]}};
    if (v.reachable) {
      r["status"] = v.status;
    } else {
      r["error"] = v.error;
    }
    ranks.push_back(std::move(r));
  }
  return {{"world_size", view.world_size},
          {"elapsed_s", view.elapsed_s},
          {"ranks", std::move(ranks)},
          {"analysis", analysis}};
}

}  // namespace collie
