// The live-status tree over real debug servers (ranks as threads, test_cluster.h): a frozen rank
// is named alone (the tree asks its children directly), a frozen subtree is named whole, a
// querier that cannot read rank 0's address reports the world as not reached rather than dead,
// and a slow store never makes healthy ranks unreachable (issue 40 item 9).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "debug_server/live_tree.h"
#include "debug_server/live_verdict.h"
#include "debug_server/test_cluster.h"
#include "support/time_scale.h"

namespace collie {
namespace {

using testing::http_get;
using testing::scaled;
using testing::TestCluster;
using Json = nlohmann::json;
using namespace std::chrono_literals;

// A listener on 127.0.0.1:port that accepts (the kernel does) and never answers: a stopped
// process's server.
class HungServer {
 public:
  explicit HungServer(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd_, 16) == 0;
  }
  ~HungServer() { close(fd_); }
  bool ok() const { return ok_; }
  // The next connection the kernel accepted for it, or -1 when none comes within `ms`.
  int accept_within(int ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms) != 1) return -1;
    return accept(fd_, nullptr, nullptr);
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

// The world's live summary as rank 0's cluster view reports it.
Json live_of(TestCluster& c, int timeout_ms = 700) {
  auto r = http_get(c.port(0),
                    fmt::format("/v1/cluster/status?timeout_ms={}&stall_ms=60000", timeout_ms));
  if (!r || r->status != 200) return Json();
  return Json::parse(r->body);
}

// Every rank's tree node has read its children's addresses (they are read in the background
// once the servers start).
void wait_for_tree(TestCluster& c, int world) {
  for (int i = 0; i < 100; ++i) {
    const Json j = live_of(c);
    if (!j.is_null() && j["live"]["answered"]["count"] == world) return;
    std::this_thread::sleep_for(50ms);
  }
  FAIL() << "the tree never answered for all " << world << " ranks: " << live_of(c).dump(2);
}

std::string missing_text(const Json& live, const std::string& kind) {
  for (const auto& m : live["missing"]) {
    if (m["kind"] == kind) return m["ranks"]["text"];
  }
  return "";
}

// Rank r's server stops; a listener that never answers takes its port (a stopped process).
std::unique_ptr<HungServer> freeze(TestCluster& c, int r) {
  const int port = c.port(r);
  c.rank(r).server->stop();
  return std::make_unique<HungServer>(port);
}

// 20 ranks: rank 0's children are ranks 1, 3, 5, 7-19; rank 1 answers for [1, 3), so rank 2
// is its child.
constexpr int kWorld = 20;

TEST(LiveTreeCluster, FrozenRankIsNamedAloneItsChildIsAskedDirectly) {
  ASSERT_EQ(tree_children(tree_span_of(1, kWorld)).size(), 1u);
  TestCluster c(kWorld);
  c.run_collectives(3);
  wait_for_tree(c, kWorld);
  const std::unique_ptr<HungServer> frozen = freeze(c, 1);
  ASSERT_TRUE(frozen->ok());
  const auto t0 = std::chrono::steady_clock::now();
  const Json j = live_of(c, 500);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(j.is_null());
  const Json& live = j["live"];
  EXPECT_EQ(live["answered"]["count"], kWorld - 1) << live.dump(2);
  EXPECT_EQ(missing_text(live, "no_answer"), "1") << live.dump(2);
  EXPECT_EQ(missing_text(live, "not_reached"), "") << live.dump(2);
  EXPECT_EQ(live["culprits"]["text"], "1") << live.dump(2);
  EXPECT_EQ(live["findings"][0]["kind"], "UNREACHABLE") << live.dump(2);
  // Rank 0 (height 2) waits W(1) + L = 1 s for rank 1, then L for rank 2; the detail fetch of
  // this small world another L for rank 1.
  EXPECT_LT(took, scaled(3.5));
}

TEST(LiveTreeCluster, FrozenSubtreeIsNamedWhole) {
  TestCluster c(kWorld);
  c.run_collectives(3);
  wait_for_tree(c, kWorld);
  const int p1 = c.port(1), p2 = c.port(2);
  c.rank(1).server->stop();
  c.rank(2).server->stop();
  HungServer f1(p1), f2(p2);
  ASSERT_TRUE(f1.ok() && f2.ok());
  const Json j = live_of(c, 500);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["live"]["answered"]["count"], kWorld - 2) << j["live"].dump(2);
  EXPECT_EQ(missing_text(j["live"], "no_answer"), "1-2") << j["live"].dump(2);
  EXPECT_EQ(j["live"]["culprits"]["text"], "1-2") << j["live"].dump(2);
}

// A node whose asker goes away cancels its own asks: rank 0 is asked with a 60 s allowance per
// level and asks (frozen) rank 1, which would hold that ask for W(1) + L = 120 s; the asker
// closes its connection, and rank 0 closes its connection to rank 1 at once (no work is left
// behind for an asker that gave up; issue 39).
TEST(LiveTreeCluster, AskerThatGoesAwayCancelsTheNodesAsks) {
  TestCluster c(kWorld);
  c.run_collectives(1);
  wait_for_tree(c, kWorld);
  std::unique_ptr<HungServer> hung = freeze(c, 1);
  ASSERT_TRUE(hung->ok());
  HungServer& frozen = *hung;
  const int asker = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(c.port(0)));
  ASSERT_EQ(connect(asker, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string req = fmt::format(
      "GET /v1/tree/status?rank=0&world={}&level_ms=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
      kWorld);
  ASSERT_EQ(send(asker, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  const int ask = frozen.accept_within(static_cast<int>(scaled(10.0) * 1000));
  ASSERT_GE(ask, 0) << "rank 0 never asked rank 1";
  std::string head;  // rank 0's request, read so that what comes next is its close
  pollfd in{ask, POLLIN, 0};
  while (head.find("\r\n\r\n") == std::string::npos &&
         poll(&in, 1, static_cast<int>(scaled(10.0) * 1000)) == 1) {
    char buf[4096];
    const ssize_t k = recv(ask, buf, sizeof buf, 0);
    if (k <= 0) break;
    head.append(buf, static_cast<size_t>(k));
  }
  ASSERT_NE(head.find("/v1/tree/status?rank=1&"), std::string::npos) << head;
  close(asker);  // the asker gives up
  // Rank 0's ask to rank 1 ends: its connection closes (EOF), long before its 120 s deadline.
  pollfd p{ask, POLLIN, 0};
  const int ready = poll(&p, 1, static_cast<int>(scaled(20.0) * 1000));
  char b = 0;
  const ssize_t n = ready == 1 ? recv(ask, &b, 1, 0) : -2;
  close(ask);
  EXPECT_EQ(n, 0) << "rank 0 still holds its ask to rank 1 after its asker went away";
}

// A killed rank (refused) is an error at once, not a wait; its child still answers.
TEST(LiveTreeCluster, KilledRankAnswersAtOnce) {
  TestCluster c(kWorld);
  c.run_collectives(1);
  wait_for_tree(c, kWorld);
  c.rank(1).server->stop();
  const Json j = live_of(c, 3000);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(missing_text(j["live"], "error"), "1") << j["live"].dump(2);
  EXPECT_EQ(j["live"]["answered"]["count"], kWorld - 1) << j["live"].dump(2);
}

// A querier that has no address for rank 0 yet reports the world as not reached (unknown), not
// as unreachable ranks, and blames nobody.
TEST(LiveTreeCluster, UnknownAddressIsNotReachedNotDead) {
  TestCluster c(4);
  class Unknown : public AddressSource {
   public:
    std::vector<RankAddress> addresses(const std::vector<int>& ranks) override {
      return std::vector<RankAddress>(ranks.size());
    }
  } none;
  TreeQueryOptions o;
  o.world_size = 4;
  o.level = 500ms;
  TreeQuery q({0, 4}, std::nullopt, none, o);
  const LiveSummary s = run_tree_query(q);
  EXPECT_EQ(s.answered.count(), 0);
  ASSERT_EQ(s.missing.size(), 1u);
  EXPECT_EQ(s.missing[0].kind, "not_reached");
  EXPECT_EQ(s.missing[0].ranks.str(), "0-3");
  EXPECT_TRUE(judge_live(s, 10).culprits.empty());
}

// A store whose server is busy: it takes `delay` for every request and serves one at a time
// (its clones too), so N lookups take N x delay however many threads ask.
class SlowStore : public Store {
 public:
  SlowStore(std::shared_ptr<Store> inner, Millis delay,
            std::shared_ptr<std::mutex> serial = std::make_shared<std::mutex>())
      : Store(inner->timeout()),
        inner_(std::move(inner)),
        delay_(delay),
        serial_(std::move(serial)) {}
  void set(const std::string& k, const Bytes& v) override { slow(), inner_->set(k, v); }
  Bytes get(const std::string& k) override { return slow(), inner_->get(k); }
  int64_t add(const std::string& k, int64_t d) override { return slow(), inner_->add(k, d); }
  bool check(const std::vector<std::string>& k) override { return slow(), inner_->check(k); }
  void wait(const std::vector<std::string>& k, Millis t) override { slow(), inner_->wait(k, t); }
  Bytes compare_set(const std::string& k, const Bytes& e, const Bytes& d) override {
    return slow(), inner_->compare_set(k, e, d);
  }
  bool delete_key(const std::string& k) override { return slow(), inner_->delete_key(k); }
  int64_t num_keys() override { return slow(), inner_->num_keys(); }
  void append(const std::string& k, const Bytes& v) override { slow(), inner_->append(k, v); }
  std::vector<Bytes> multi_get(const std::vector<std::string>& k) override {
    return slow(), inner_->multi_get(k);
  }
  void multi_set(const std::vector<std::string>& k, const std::vector<Bytes>& v) override {
    slow(), inner_->multi_set(k, v);
  }
  std::shared_ptr<Store> clone() override {
    return std::make_shared<SlowStore>(inner_->clone(), delay_, serial_);
  }
  void interrupt() override { inner_->interrupt(); }
  bool members_only() const override { return inner_->members_only(); }

 private:
  // The wait itself (a parked request) does not hold the server.
  void slow() const {
    std::lock_guard<std::mutex> lk(*serial_);
    std::this_thread::sleep_for(delay_);
  }
  std::shared_ptr<Store> inner_;
  Millis delay_;
  std::shared_ptr<std::mutex> serial_;
};

// Issue 40 item 9: the store serves one request at a time, 250 ms each; the cluster view's per-rank
// timeout is 1 s. Healthy ranks are never called unreachable (the address lookups happen before the
// deadlines start, and the tree's nodes never read the store while a query waits); once the
// nodes have read their addresses, every rank answers.
TEST(LiveTreeCluster, SlowStoreNeverMakesHealthyRanksUnreachable) {
  constexpr int kRanks = 6;
  TestCluster c(
      kRanks, {},
      std::make_shared<SlowStore>(std::make_shared<HashStore>(std::chrono::seconds(30)), 250ms));
  c.run_collectives(2);
  bool complete = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(scaled(30));
  int answers = 0;
  while (!complete && std::chrono::steady_clock::now() < until) {
    auto r = http_get(c.port(0), "/v1/cluster/status?timeout_ms=1000&stall_ms=60000", 60);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const Json j = Json::parse(r->body);
    ++answers;
    // The analysis of every rank's flight recorder (a small world) names nobody unreachable.
    EXPECT_TRUE(j["analysis"]["unreachable"].empty()) << j["analysis"].dump(2);
    EXPECT_EQ(j["analysis"]["culprits"], "") << j["analysis"].dump(2);
    for (const auto& rk : j["ranks"]) {
      EXPECT_TRUE(rk["reachable"].get<bool>()) << rk.dump(2);
    }
    if (j.contains("live")) {
      // The tree: nobody missing but, while the nodes still read their addresses, not reached.
      EXPECT_EQ(missing_text(j["live"], "no_answer"), "") << j["live"].dump(2);
      EXPECT_EQ(missing_text(j["live"], "error"), "") << j["live"].dump(2);
      EXPECT_TRUE(j["live"]["culprits"]["ranges"].empty()) << j["live"].dump(2);
      complete = j["live"]["answered"]["count"] == kRanks;
    } else {
      complete = true;
    }
  }
  EXPECT_TRUE(complete) << "after " << answers << " answers";
}

}  // namespace
}  // namespace collie
