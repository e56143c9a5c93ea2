#include "debug_server/live_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/json_input.h"
#include "core/printable.h"
#include "debug_server/cluster.h"
#include "debug_server/server.h"
#include "store/store.h"

namespace collie {
namespace {

using Steady = std::chrono::steady_clock;

std::string key_of(int rank) { return fmt::format("debug_server/{}", rank); }

RankAddress parse_address(int rank, const std::string& url) {
  RankAddress a;
  std::string why;
  const std::optional<MemberAddress> at = member_address(url, &why);
  if (!at) {
    // Never contact (or send the token to) something that is not a rank's debug server.
    a.state = RankAddress::State::kBad;
    a.why =
        fmt::format("{} = '{}' is not a debug server address http://HOST:PORT ({}); not contacted",
                    key_of(rank), printable(url.substr(0, 80)), why);
    return a;
  }
  a.state = RankAddress::State::kKnown;
  a.host = at->host;
  a.port = at->port;
  a.url = url;
  return a;
}

// The host a missing rank's address names, when it says anything (not loopback).
std::string host_of_url(const std::string& url) {
  const std::optional<MemberAddress> at = member_address(url, nullptr);
  return at && !is_loopback_host(at->host) ? at->host : "";
}

}  // namespace

std::vector<TreeSpan> tree_children(TreeSpan s, int fanout) {
  std::vector<TreeSpan> out;
  const int n = s.size() - 1;
  if (n <= 0 || fanout < 1) return out;
  const int m = std::min(fanout, n);
  const int base = n / m, extra = n % m;
  int at = s.lo + 1;
  for (int i = 0; i < m; ++i) {
    const int size = base + (i < extra ? 1 : 0);
    out.push_back({at, at + size});
    at += size;
  }
  return out;
}

TreeSpan tree_span_of(int rank, int world, int fanout) {
  TreeSpan s{0, world};
  while (s.lo != rank) {
    for (const TreeSpan& c : tree_children(s, fanout)) {
      if (rank >= c.lo && rank < c.hi) {
        s = c;
        break;
      }
    }
  }
  return s;
}

int tree_height(TreeSpan s, int fanout) {
  int64_t n = s.size();
  int h = 0;
  while (n > 1) {
    n = (n - 1 + fanout - 1) / fanout;
    ++h;
  }
  return h;
}

Millis tree_answer_time(int height, Millis level) {
  Millis a{0}, b = level;  // W(0), W(1)
  if (height <= 0) return a;
  for (int h = 2; h <= height; ++h) {
    const Millis next = b + a + 2 * level;
    a = b;
    b = next;
  }
  return b;
}

std::string tree_status_target(TreeSpan s, int world, Millis level) {
  return fmt::format("/v1/tree/status?rank={}&world={}&level_ms={}", s.lo, world, level.count());
}

// --- addresses ------------------------------------------------------------------------------

std::vector<RankAddress> StoreAddresses::cached(const std::vector<int>& ranks) const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<RankAddress> out;
  for (int r : ranks) {
    auto it = cache_.find(r);
    out.push_back(it == cache_.end() ? RankAddress{} : it->second);
  }
  return out;
}

std::vector<RankAddress> StoreAddresses::addresses(const std::vector<int>& ranks) {
  read(ranks);
  return cached(ranks);
}

// Reads the keys of `ranks` that exist: one check, then one multi_get when all do, else the two
// halves in turn (a missing key costs O(log n) checks).
void StoreAddresses::read_present(const std::vector<int>& ranks, std::map<int, RankAddress>& out) {
  if (ranks.empty()) return;
  std::vector<std::string> keys;
  for (int r : ranks) keys.push_back(key_of(r));
  if (store_->check(keys)) {
    const std::vector<Bytes> values = store_->multi_get(keys);
    for (size_t i = 0; i < ranks.size(); ++i)
      out[ranks[i]] = parse_address(ranks[i], to_string(values[i]));
    return;
  }
  if (ranks.size() == 1) return;
  const auto mid = ranks.begin() + static_cast<long>(ranks.size() / 2);
  read_present(std::vector<int>(ranks.begin(), mid), out);
  read_present(std::vector<int>(mid, ranks.end()), out);
}

std::vector<int> StoreAddresses::read(const std::vector<int>& ranks) {
  std::vector<int> todo;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (int r : ranks) {
      auto it = cache_.find(r);
      if (it == cache_.end() || it->second.state == RankAddress::State::kUnknown ||
          it->second.state == RankAddress::State::kNone) {
        todo.push_back(r);
      }
    }
  }
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  std::map<int, RankAddress> found;
  std::vector<int> none;
  try {
    read_present(todo, found);
  } catch (const std::exception& e) {
    // The store failed: what was not read is unknown (not "absent"), with the reason.
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [r, a] : found) cache_[r] = a;
    for (int r : todo) {
      if (found.count(r) == 0) {
        RankAddress& a = cache_[r];
        a.state = RankAddress::State::kUnknown;
        a.why = fmt::format("store lookup of {} failed: {}", key_of(r), printable(e.what()));
      }
    }
    throw;
  }
  std::lock_guard<std::mutex> lk(mu_);
  for (int r : todo) {
    auto it = found.find(r);
    if (it != found.end()) {
      cache_[r] = it->second;
      continue;
    }
    RankAddress& a = cache_[r];
    a.state = RankAddress::State::kNone;
    a.why = fmt::format("no {} in the store: its debug server has not started (yet)", key_of(r));
    none.push_back(r);
  }
  return none;
}

bool StoreAddresses::wait_and_read(const std::vector<int>& ranks, Millis timeout) {
  std::vector<std::string> keys;
  for (int r : ranks) keys.push_back(key_of(r));
  try {
    store_->wait(keys, timeout);
  } catch (const StoreError&) {
    return false;  // timed out (or interrupted: the caller checks why it is stopping)
  }
  return read(ranks).empty();
}

TreeAddressResolver::TreeAddressResolver(std::shared_ptr<Store> store, int rank, int world,
                                         Millis unpublished_grace)
    : addrs_(std::move(store)), grace_(unpublished_grace) {
  const TreeSpan s = tree_span_of(rank, world);
  const std::vector<TreeSpan> children = tree_children(s);
  for (const TreeSpan& c : children) ranks_.push_back(c.lo);
  for (const TreeSpan& c : children) {
    for (const TreeSpan& g : tree_children(c)) ranks_.push_back(g.lo);
  }
  if (ranks_.empty()) return;  // a leaf asks no one
  thread_.start(
      "collie-tree-addr", [this] { body(); },
      [this] {
        {
          std::lock_guard<std::mutex> lk(mu_);
          stop_ = true;
        }
        cv_.notify_all();
        addrs_.store().interrupt();
      });
}

TreeAddressResolver::~TreeAddressResolver() { stop(); }

void TreeAddressResolver::stop() { thread_.stop(); }

std::vector<RankAddress> TreeAddressResolver::addresses(const std::vector<int>& ranks) {
  std::vector<RankAddress> out = addrs_.cached(ranks);
  if (std::chrono::steady_clock::now() - started_ >= grace_) return out;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].state != RankAddress::State::kNone) continue;
    out[i].state = RankAddress::State::kUnknown;
    out[i].why = fmt::format(
        "no {} in the store when this node read it at its start; the node waits for it (a rank "
        "still starting, or a slow store); ask again",
        key_of(ranks[i]));
  }
  return out;
}

// Reads every address once; ranks that have not published are waited for (the store parks the
// wait and answers as their keys appear), with waits growing to a minute so a rank that never
// starts its server costs one request a minute. Then it parks until stop(): a thread that
// returned on its own would be left unjoined by ranks that end with _exit.
void TreeAddressResolver::body() {
  auto stopping = [this] {
    std::lock_guard<std::mutex> lk(mu_);
    return stop_;
  };
  std::vector<int> missing = ranks_;
  bool first = true;
  Millis wait{1000};
  while (!missing.empty() && !stopping()) {
    try {
      if (first) {
        missing = addrs_.read(ranks_);
        first = false;
        continue;
      }
      if (addrs_.wait_and_read(missing, wait)) {
        missing.clear();
      } else {
        missing = addrs_.read(missing);
      }
      wait = std::min(Millis(60000), wait * 2);
    } catch (const NetworkError&) {
      break;  // the store is gone: nothing more will be published
    } catch (const std::exception&) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, std::chrono::seconds(1), [this] { return stop_; });
    }
  }
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [this] { return stop_; });
}

// --- the query --------------------------------------------------------------------------------

TreeQuery::TreeQuery(TreeSpan span, std::optional<LiveSummary> local, AddressSource& addrs,
                     TreeQueryOptions opts)
    : span_(span),
      local_(std::move(local)),
      addrs_(addrs),
      o_(std::move(opts)),
      result_(empty_summary(span.lo, span.hi, o_.world_size)) {}

std::vector<http::Exchange*> TreeQuery::start() {
  started_ = true;
  if (local_) {
    merge_summary(result_, *local_);
    return ask(tree_children(span_), true);
  }
  return ask({span_}, true);
}

std::vector<http::Exchange*> TreeQuery::ask(const std::vector<TreeSpan>& spans, bool fallback) {
  std::vector<http::Exchange*> out;
  if (spans.empty()) return out;
  std::vector<int> ranks;
  for (const TreeSpan& s : spans) ranks.push_back(s.lo);
  // A querier's source may read the store here; the deadlines start once it has.
  const std::vector<RankAddress> at = addrs_.addresses(ranks);
  const auto now = Steady::now();
  for (size_t i = 0; i < spans.size(); ++i) {
    const TreeSpan& s = spans[i];
    const RankAddress& a = at[i];
    auto ask = std::make_unique<Ask>();
    ask->span = s;
    ask->fallback = fallback;
    if (a.state == RankAddress::State::kUnknown) {
      add_missing(result_, "not_reached", s.lo, s.hi - 1,
                  a.why.empty() ? fmt::format("the address of rank {} was not read from the store "
                                              "yet (a slow store?); ask again",
                                              s.lo)
                                : a.why);
      continue;
    }
    if (a.state != RankAddress::State::kKnown) {
      const std::vector<http::Exchange*> more = fail(*ask, "no_address", a.why);
      out.insert(out.end(), more.begin(), more.end());
      continue;
    }
    http::GetRequest r;
    r.host = a.host;
    r.port = a.port;
    r.target = tree_status_target(s, o_.world_size, o_.level);
    if (!o_.token.empty()) r.headers.emplace_back("Authorization", "Bearer " + o_.token);
    r.deadline = now + tree_answer_time(tree_height(s), o_.level) + o_.level;
    r.max_body_bytes = kMaxTreeAnswerBytes;
    r.cancel = o_.cancel;
    r.cancel_fd = o_.asker_fd;
    ask->url = a.url;
    ask->x = std::make_unique<http::Exchange>(std::move(r));
    out.push_back(ask->x.get());
    asks_.push_back(std::move(ask));
    ++pending_;
  }
  return out;
}

// The asked rank is missing; its span's other ranks are asked directly (one level) or, past
// that, not reached.
std::vector<http::Exchange*> TreeQuery::fail(const Ask& a, const std::string& kind,
                                             const std::string& why) {
  add_missing(result_, kind, a.span.lo, a.span.lo, why, host_of_url(a.url));
  if (a.span.size() <= 1) return {};
  if (a.fallback) return ask(tree_children(a.span), false);
  add_missing(result_, "not_reached", a.span.lo + 1, a.span.hi - 1,
              fmt::format("below rank {}, which did not answer", a.span.lo));
  return {};
}

std::vector<http::Exchange*> TreeQuery::finished(http::Exchange* x) {
  auto it = std::find_if(asks_.begin(), asks_.end(),
                         [x](const std::unique_ptr<Ask>& a) { return a->x.get() == x; });
  if (it == asks_.end()) return {};
  Ask& a = **it;
  --pending_;
  if (!x->ok()) return fail(a, x->timed_out() ? "no_answer" : "error", x->error());
  const http::Reply reply = x->take_reply();
  if (reply.status != 200) {
    std::string detail;
    try {
      const nlohmann::json e = parse_json_input(reply.body, 4);
      if (e.is_object() && e.contains("error") && e["error"].is_string()) {
        detail = ": " + e["error"].get<std::string>().substr(0, 160);
      }
    } catch (const std::exception&) {
    }
    return fail(a, "error",
                fmt::format("HTTP {} from {}{}{}", reply.status, x->url(), detail,
                            reply.status == 401 ? o_.token_note : ""));
  }
  LiveSummary part;
  std::string why;
  try {
    const nlohmann::json j = parse_json_input(reply.body, 16);
    if (!summary_from_json(j, a.span.lo, a.span.hi, o_.world_size, &part, &why)) {
      return fail(a, "error",
                  fmt::format("{} answered something that is not the status of ranks {}-{}: {}",
                              a.url, a.span.lo, a.span.hi - 1, why));
    }
  } catch (const std::exception& e) {
    return fail(a, "error",
                fmt::format("{} answered something that is not JSON: {}", a.url,
                            printable(std::string(e.what()).substr(0, 160))));
  }
  child_levels_ = std::max(child_levels_, part.levels + (a.fallback ? 0 : 1));
  merge_summary(result_, part);
  return {};
}

LiveSummary TreeQuery::take() {
  result_.levels = (local_ ? 1 : 0) + child_levels_;
  result_.requests += static_cast<int64_t>(asks_.size());
  return std::move(result_);
}

LiveSummary run_tree_query(TreeQuery& q) {
  std::vector<http::Exchange*> first = q.start();
  http::run_all(first, [&q](http::Exchange* x) { return q.finished(x); });
  return q.take();
}

}  // namespace collie
