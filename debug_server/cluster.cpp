#include "debug_server/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "core/json_input.h"
#include "core/printable.h"
#include "debug_server/http_client.h"
#include "store/store.h"
#include "store/store_secret.h"

namespace collie {
namespace {

struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  int remaining = 0;
  std::vector<RankView> results;
  std::atomic<bool> ended{false};  // the request that started the fetches has returned
};

struct Fetch {
  int rank = 0;
  std::string url;
  MemberAddress at;
  std::chrono::steady_clock::time_point deadline;
  std::string token;       // "" = send none
  std::string token_note;  // why a token was not sent, for a 401
  const std::atomic<bool>* ended = nullptr;
};

// GET `target` of a rank; returns the body of a 200 or throws with the reason.
std::string get_body(const Fetch& f, const std::string& target, size_t max_body) {
  http::GetRequest r;
  r.host = f.at.host;
  r.port = f.at.port;
  r.target = target;
  if (!f.token.empty()) r.headers.emplace_back("Authorization", "Bearer " + f.token);
  r.deadline = f.deadline;
  r.max_body_bytes = max_body;
  r.cancel = f.ended;
  const http::Reply res = http::get(r);
  if (res.status != 200) {
    throw std::runtime_error(fmt::format("HTTP {} from {}{}{}", res.status, f.url, target,
                                         res.status == 401 ? f.token_note : ""));
  }
  return res.body;
}

RankView fetch_one(const Fetch& f) {
  RankView v;
  v.rank = f.rank;
  v.url = f.url;
  try {
    // Depth-limited: the status is embedded in the cluster view's own JSON, whose writer
    // recurses (a rank's status nests 4 deep).
    v.status = parse_json_input(get_body(f, "/v1/status", kMaxFanoutStatusBytes), 32);
    v.dump =
        parse_dump(get_body(f, fmt::format("/v1/flight_recorder?entries={}", kClusterViewEntries),
                            kMaxFanoutDumpBytes));
    if (v.dump->rank != f.rank) {
      throw std::runtime_error(fmt::format("{} served the dump of rank {}", f.url, v.dump->rank));
    }
    v.reachable = true;
  } catch (const std::exception& e) {
    v.status = nullptr;
    v.dump.reset();
    v.error = printable(e.what());
  }
  return v;
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

ClusterView fetch_cluster(Store& store, int world_size, Millis per_rank_timeout,
                          const std::string& token, const SelfData* self) {
  const auto t0 = std::chrono::steady_clock::now();
  ClusterView view;
  view.world_size = world_size;
  auto pending = std::make_shared<Pending>();
  pending->results.resize(world_size);
  std::vector<Fetch> targets;
  // The token goes only to addresses that members of the job wrote.
  const bool send_token = !token.empty() && store.members_only();
  const std::string token_note =
      token.empty() || send_token
          ? ""
          : fmt::format(
                "; the bearer token was not sent: the store serves anyone who reaches it, "
                "so this address may be planted (give the job a {})",
                kStoreSecretEnv);
  for (int r = 0; r < world_size; ++r) {
    RankView& v = pending->results[r];
    v.rank = r;
    if (self != nullptr && r == self->rank) {
      v.status = self->status;
      v.url = v.status.value("url", "");
      try {
        v.dump = parse_dump(self->flight_recorder);
        v.reachable = true;
      } catch (const std::exception& e) {
        v.error = e.what();
      }
      continue;
    }
    const std::string key = fmt::format("debug_server/{}", r);
    try {
      // check() never waits, so a rank that never started its server costs nothing.
      if (!store.check({key})) {
        v.error = "no address in the store (debug server not started on that rank?)";
        continue;
      }
      std::string url = store.get_string(key);
      std::string why;
      const std::optional<MemberAddress> at = member_address(url, &why);
      if (!at) {
        // Never contact (or send the token to) something that is not a rank's debug server.
        v.url = printable(url.substr(0, 120));
        v.error = fmt::format(
            "{} = '{}' is not a debug server address http://HOST:PORT ({}); "
            "not contacted",
            key, v.url, why);
        continue;
      }
      targets.push_back(Fetch{.rank = r,
                              .url = std::move(url),
                              .at = *at,
                              .deadline = t0 + per_rank_timeout,
                              .token = send_token ? token : "",
                              .token_note = token_note,
                              .ended = &pending->ended});
    } catch (const std::exception& e) {
      v.error = fmt::format("store lookup of {} failed: {}", key, e.what());
    }
  }
  pending->remaining = static_cast<int>(targets.size());
  for (Fetch& f : targets) {
    pending->results[f.rank].url = f.url;
    std::thread([pending, f = std::move(f)] {
      RankView v = fetch_one(f);
      std::lock_guard<std::mutex> lock(pending->mu);
      if (pending->results[f.rank].error.empty()) pending->results[f.rank] = std::move(v);
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
  pending->ended = true;  // late fetches stop reading within 50 ms
  view.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return view;
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

nlohmann::json cluster_json(const ClusterView& view, const Analysis& analysis) {
  const std::vector<RankVerdict> verdicts = analysis.verdicts();
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& v : view.ranks) {
    const bool judged = v.rank >= 0 && v.rank < static_cast<int>(verdicts.size());
    nlohmann::json r = {
        {"rank", v.rank},
        {"reachable", v.reachable},
        {"url", v.url},
        {"state", judged ? verdicts[v.rank].state : "ok"},
        {"reasons", judged ? verdicts[v.rank].reasons : std::vector<std::string>{}}};
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
          {"analysis", to_json_value(analysis)}};
}

}  // namespace collie
