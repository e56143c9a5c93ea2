#include "debug_server/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <map>
#include <memory>
#include <numeric>
#include <ranges>

#include "core/json_input.h"
#include "core/printable.h"
#include "debug_server/http_client.h"
#include "store/store.h"
#include "store/store_secret.h"

namespace collie {
namespace {

using Steady = std::chrono::steady_clock;

// One rank's two GETs, and what it is missing.
struct Fetch {
  int rank = 0;
  std::string url;
  std::unique_ptr<http::Exchange> status, dump;
};

// The body of a 200 or throws with the reason.
std::string body_of(http::Exchange& x, const std::string& token_note) {
  if (!x.ok()) throw std::runtime_error(x.error());
  if (x.reply().status != 200) {
    throw std::runtime_error(fmt::format("HTTP {} from {}{}", x.reply().status, x.url(),
                                         x.reply().status == 401 ? token_note : ""));
  }
  return x.take_reply().body;
}

void read_fetch(Fetch& f, const std::string& token_note, RankView& v) {
  try {
    // Depth-limited: the status is embedded in the cluster view's own JSON, whose writer
    // recurses (a rank's status nests 4 deep).
    v.status = parse_json_input(body_of(*f.status, token_note), 32);
    if (f.dump) {
      v.dump = parse_dump(body_of(*f.dump, token_note));
      if (v.dump->rank != f.rank) {
        throw std::runtime_error(fmt::format("{} served the dump of rank {}", f.url, v.dump->rank));
      }
    } else if (!v.status.is_object() || !v.status.contains("rank") || v.status["rank"] != f.rank) {
      throw std::runtime_error(fmt::format("{} served the status of another rank", f.url));
    }
    v.reachable = true;
  } catch (const std::exception& e) {
    v.status = nullptr;
    v.dump.reset();
    v.error = printable(e.what());
  }
}

std::string token_note_for(Store& store, const std::string& token) {
  return token.empty() || store.members_only()
             ? ""
             : fmt::format(
                   "; the bearer token was not sent: the store serves anyone who reaches it, "
                   "so this address may be planted (give the job a {})",
                   kStoreSecretEnv);
}

}  // namespace

bool is_member_url(const std::string& url, std::string* why) {
  return member_address(url, why).has_value();
}

std::optional<MemberAddress> member_address(const std::string& url, std::string* why) {
  auto fail = [why](std::string w) -> std::optional<MemberAddress> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  constexpr std::string_view kScheme = "http://";
  if (url.size() > 300) return fail("longer than 300 characters");
  if (url.rfind(kScheme, 0) != 0) return fail("does not start with http://");
  const std::string_view rest = std::string_view(url).substr(kScheme.size());
  std::string_view host;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return fail("malformed [IPv6]:port");
    }
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) {
      return fail("malformed IPv6 address");
    }
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return fail("has no :port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    const bool host_ok =
        !host.empty() && host.front() != '-' && host.front() != '.' &&
        std::all_of(host.begin(), host.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
        });
    if (!host_ok) return fail("host is not a plain name or address (no user@, path or query)");
  }
  int p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535) {
    return fail("port is not 1..65535 followed by nothing");
  }
  return MemberAddress{std::string(host), p};
}

ClusterView fetch_ranks(Store& store, int world_size, const std::vector<int>& ranks, bool dumps,
                        Millis per_rank_timeout, const std::string& token, const SelfData* self) {
  const auto t0 = Steady::now();
  ClusterView view;
  view.world_size = world_size;
  // The token goes only to addresses that members of the job wrote.
  const bool send_token = !token.empty() && store.members_only();
  const std::string token_note = token_note_for(store, token);
  std::vector<int> others;
  for (int r : ranks) {
    if (self == nullptr || r != self->rank) others.push_back(r);
  }
  // One batched read of the addresses, before any deadline starts.
  std::shared_ptr<Store> borrowed(&store, [](Store*) {});
  StoreAddresses book(borrowed);
  std::vector<RankAddress> at;
  std::string lookup_error;
  try {
    at = book.addresses(others);
  } catch (const std::exception& e) {
    lookup_error = printable(e.what());
    at = book.cached(others);
  }
  const auto deadline = Steady::now() + per_rank_timeout;
  std::vector<Fetch> fetches;
  std::vector<http::Exchange*> xs;
  std::map<int, RankView> views;
  for (size_t i = 0; i < others.size(); ++i) {
    const int r = others[i];
    RankView& v = views[r];
    v.rank = r;
    const RankAddress& a = at[i];
    if (a.state != RankAddress::State::kKnown) {
      v.error = a.state == RankAddress::State::kNone
                    ? "no address in the store (debug server not started on that rank?)"
                : !a.why.empty()
                    ? a.why
                    : fmt::format("store lookup of debug_server/{} failed: {}", r, lookup_error);
      continue;
    }
    v.url = a.url;
    auto get = [&](std::string target, size_t max_body) {
      http::GetRequest g;
      g.host = a.host;
      g.port = a.port;
      g.target = std::move(target);
      if (send_token) g.headers.emplace_back("Authorization", "Bearer " + token);
      g.deadline = deadline;
      g.max_body_bytes = max_body;
      return std::make_unique<http::Exchange>(std::move(g));
    };
    Fetch f;
    f.rank = r;
    f.url = a.url;
    f.status = get("/v1/status", kMaxFanoutStatusBytes);
    xs.push_back(f.status.get());
    if (dumps) {
      f.dump = get(fmt::format("/v1/flight_recorder?entries={}", kClusterViewEntries),
                   kMaxFanoutDumpBytes);
      xs.push_back(f.dump.get());
    }
    fetches.push_back(std::move(f));
  }
  http::run_all(xs);
  for (Fetch& f : fetches) read_fetch(f, token_note, views[f.rank]);
  for (auto& [rank, v] : views) {  // not views::values: clang 14 with libstdc++ 12 rejects it
    if (!v.reachable && v.error.rfind("no answer by the deadline", 0) == 0) {
      v.error = fmt::format("no answer from {} within {} ms ({})", v.url, per_rank_timeout.count(),
                            v.error);
    }
  }
  if (self != nullptr && std::find(ranks.begin(), ranks.end(), self->rank) != ranks.end()) {
    RankView& v = views[self->rank];
    v.rank = self->rank;
    v.status = self->status;
    v.url = v.status.value("url", "");
    try {
      if (dumps) v.dump = parse_dump(self->flight_recorder);
      v.reachable = true;
    } catch (const std::exception& e) {
      v.error = e.what();
    }
  }
  for (auto& [r, v] : views) view.ranks.push_back(std::move(v));
  view.elapsed_s = std::chrono::duration<double>(Steady::now() - t0).count();
  return view;
}

ClusterView fetch_cluster(Store& store, int world_size, Millis per_rank_timeout,
                          const std::string& token, const SelfData* self) {
  std::vector<int> all(static_cast<size_t>(std::max(world_size, 0)));
  std::iota(all.begin(), all.end(), 0);
  return fetch_ranks(store, world_size, all, true, per_rank_timeout, token, self);
}

TreeQueryOptions tree_options(Store& store, int world_size, Millis level,
                              const std::string& token) {
  TreeQueryOptions o;
  o.world_size = world_size;
  o.level = level;
  if (store.members_only()) o.token = token;
  o.token_note = token_note_for(store, token);
  return o;
}

std::vector<int> named_ranks(const LiveReport& r, const LiveSummary& s, size_t max) {
  std::vector<int> out;
  auto take = [&](const RankRanges& set, size_t n) {
    for (int x : set.first_ranks(n)) {
      if (out.size() >= max) return;
      if (s.answered.lists(x) && std::find(out.begin(), out.end(), x) == out.end())
        out.push_back(x);
    }
  };
  for (const LiveFinding& f : r.findings) {
    if (f.culprit) take(f.ranks, max);
  }
  for (const LiveFinding& f : r.findings) {
    if (!f.culprit) take(f.ranks, 4);
  }
  for (const LiveGroup& g : s.groups) {
    for (const LiveBucket& b : g.buckets) take(b.ranks, 1);
    break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string detail_line(const RankView& v) {
  if (!v.reachable) return fmt::format("rank {}: {}", v.rank, v.error);
  const nlohmann::json& s = v.status;
  std::string out = fmt::format("rank {} on {} (pid {})", v.rank, s.value("host", std::string("?")),
                                s.value("pid", int64_t{0}));
  const nlohmann::json groups = s.value("groups", nlohmann::json::array());
  for (const auto& g : groups) {
    if (!g.is_object()) continue;
    out += fmt::format("; group {}:", g.value("pg", std::string("?")));
    const nlohmann::json inflight = g.value("inflight", nlohmann::json::array());
    for (const auto& op : inflight) {
      if (!op.is_object()) continue;
      out += fmt::format(" in {} #{} for {:.1f} s,", op.value("op", std::string("?")),
                         op.value("seq", uint64_t{0}), op.value("age_s", 0.0));
    }
    out += fmt::format(" last completed {} #{}, last progress {:.1f} s ago",
                       g.value("last_completed_op", std::string("-")),
                       g.value("last_completed_seq", uint64_t{0}),
                       g.value("since_last_progress_s", 0.0));
  }
  return printable(out);
}

LiveView live_view(Store& store, TreeQuery& tree, int world_size, Millis level,
                   double stall_after_s, const std::string& token, const SelfData* self) {
  const auto t0 = Steady::now();
  LiveView v;
  v.summary = run_tree_query(tree);
  v.report = judge_live(v.summary, stall_after_s);
  v.report.elapsed_s = std::chrono::duration<double>(Steady::now() - t0).count();
  if (world_size <= kFullViewRanks) {
    v.details = fetch_cluster(store, world_size, level, token, self);
    v.analysis = analyze_cluster(v.details, stall_after_s);
  } else {
    v.details = fetch_ranks(store, world_size, named_ranks(v.report, v.summary, kDetailRanks),
                            false, level, token, self);
  }
  v.elapsed_s = std::chrono::duration<double>(Steady::now() - t0).count();
  return v;
}

Analysis analyze_cluster(const ClusterView& view, double stall_after_s) {
  AnalyzeOptions o;
  o.expected_world = view.world_size;
  o.live = true;
  o.stall_after_s = stall_after_s;
  std::vector<RankDump> dumps;
  for (const RankView& v : view.ranks) {
    if (v.reachable && v.dump) {
      dumps.push_back(*v.dump);
    } else {
      o.unreachable.push_back({v.rank, v.error});
    }
  }
  return analyze(dumps, o);
}

nlohmann::json cluster_json(const LiveView& lv) {
  const ClusterView& view = lv.details;
  const std::vector<RankVerdict> verdicts =
      lv.analysis ? lv.analysis->verdicts() : std::vector<RankVerdict>{};
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& v : view.ranks) {
    const bool judged = v.rank >= 0 && v.rank < static_cast<int>(verdicts.size());
    std::string state = judged ? verdicts[v.rank].state : "ok";
    std::vector<std::string> reasons =
        judged ? verdicts[v.rank].reasons : std::vector<std::string>{};
    if (!judged) {
      // Without the analyzer (a large world), the live findings that name the rank.
      for (const LiveFinding& f : lv.report.findings) {
        if (!f.ranks.lists(v.rank)) continue;
        reasons.push_back(f.message);
        if (state == "ok") {
          state = f.kind == "NOT_JOINED"                        ? "straggler"
                  : f.kind == "COLLECTIVE_TYPE_MISMATCH"        ? "culprit"
                  : f.kind == "STUCK" || f.kind == "STRAGGLING" ? "stalled"
                                                                : "ok";
        }
      }
      if (!v.reachable) state = "unreachable";
    }
    nlohmann::json r = {{"rank", v.rank},
                        {"reachable", v.reachable},
                        {"url", v.url},
                        {"state", state},
                        {"reasons", reasons}};
    if (v.reachable) {
      r["status"] = v.status;
    } else {
      r["error"] = v.error;
    }
    ranks.push_back(std::move(r));
  }
  return {{"world_size", view.world_size},
          {"elapsed_s", lv.elapsed_s},
          {"live", live_json(lv.report, lv.summary)},
          {"ranks", std::move(ranks)},
          {"analysis", lv.analysis ? to_json_value(*lv.analysis) : nlohmann::json(nullptr)}};
}

}  // namespace collie
