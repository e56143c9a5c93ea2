// Live status at N simulated ranks (issue 39): N fake debug servers on 127.x.y.z addresses,
// served event-driven by a few processes of one thread each, answered by the same tree code a
// rank runs (debug_server/live_tree.h, live_summary.h), and queried by a real
// `collie analyze --live` through a real store. One run = one N; live.sh sweeps N.
//
//   scale_live --ranks N [--collie PATH] [--pattern lagging-host|frozen-rank|healthy]
//              [--ranks-per-host 8] [--per-proc 4096] [--layout interleaved|blocks]
//              [--level-ms 0] [--host-groups]
//              [--base-port 20000] [--timeout-s 600] [--show]
//
// Rank r is on simulated host h = r / ranks-per-host ("node<h>", address 127.1.<h/256>.<h%256>)
// and listens on base-port + r % ranks-per-host. Its status is synthetic: every rank in
// all_reduce #812 for 41.9 s, except (lagging-host) the ranks of host N/(2*rph) idle after #811
// for 42 s, or (frozen-rank) rank 1, whose server accepts and never answers (a stopped
// process); healthy: everyone in #812 for 0.01 s. --host-groups adds one group per host (a
// tensor-parallel group), so the summary carries N/rph groups.
// The servers answer /v1/tree/status as a rank does, and /v1/status and /v1/flight_recorder
// (a 32-entry dump) for the querier's details and for the collie before the tree (which reads
// every rank's). Each process serves at most --per-proc ranks: a tree edge inside one process
// costs two descriptors, and a process may hold 20,000 here. With P = ceil(N / per-proc)
// processes, rank r is served by process r mod P (--layout interleaved, the default: a node's
// children are served by other processes, as ranks on their own CPUs) or by process
// r / per-proc (--layout blocks: one process serves a whole subtree, one answer after another).
// Address reads: each simulated rank with children reads its children's and grandchildren's
// addresses from the store once at start, as TreeAddressResolver does (reported, not timed in
// the query).
// Output: one JSON line: the query's wall time, the querier's peak threads, descriptors and
// RSS, the servers' peak descriptors and RSS, store requests during the query, and what the
// query answered (answered, levels, status requests, culprits, summary). --show also prints
// the text report of a second query on stderr.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/fd_limit.h"
#include "core/log.h"
#include "debug/flight_recorder.h"
#include "debug_server/http_client.h"
#include "debug_server/http_request.h"
#include "debug_server/http_server.h"
#include "debug_server/live_summary.h"
#include "debug_server/live_tree.h"
#include "debug_server/status_json.h"
#include "store/tcp_store.h"

extern char** environ;

namespace collie {
namespace {

using Steady = std::chrono::steady_clock;
using json = nlohmann::json;

struct Args {
  int ranks = 0;
  std::string collie = "build/src/cli/collie";
  std::string pattern = "lagging-host";
  int rph = 8;
  int per_proc = 4096;
  int level_ms = 0;  // 0: collie's default --timeout (not passed)
  bool host_groups = false;
  bool show = false;  // also print the text report (stderr)
  int base_port = 20000;
  int timeout_s = 600;
  // server mode
  // interleaved: rank r is served by process r mod P (no subtree on one thread, as in a job
  // where every rank answers on its own CPU); blocks: process p serves the contiguous ranks
  // [p x per-proc, (p+1) x per-proc), a whole subtree of one of rank 0's children.
  std::string layout = "interleaved";
  bool serve = false;
  int proc = -1, procs = 0;
  int store_port = 0;
};

std::string host_ip(int h) { return fmt::format("127.1.{}.{}", (h >> 8) & 255, h & 255); }

uint64_t status_kib(pid_t pid, const char* key) {
  FILE* f = std::fopen(fmt::format("/proc/{}/status", pid).c_str(), "r");
  if (!f) return 0;
  char line[256];
  uint64_t v = 0;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, key, n) == 0) v = std::strtoull(line + n, nullptr, 10);
  }
  std::fclose(f);
  return v;
}

// User + system CPU seconds of a process so far (/proc/<pid>/stat fields 14 and 15).
double cpu_s(pid_t pid) {
  FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (!f) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (p == nullptr ||
      std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) {
    return 0;
  }
  return static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

uint64_t fd_count(pid_t pid) {
  DIR* d = opendir(fmt::format("/proc/{}/fd", pid).c_str());
  if (d == nullptr) return 0;
  uint64_t n = 0;
  while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// --- one server process: the simulated ranks [first, first + count) -------------------------

struct Rank {
  int rank = 0;
  int host = 0;
  int listen_fd = -1;
  bool frozen = false;
  bool behind = false;
};

// The synthetic LiveStatus of a rank.
std::vector<LiveStatus::GroupSnapshot> snapshot_of(const Args& a, const Rank& r) {
  std::vector<LiveStatus::GroupSnapshot> out;
  auto group = [&](std::string pg, std::string desc, int size, int group_rank) {
    LiveStatus::GroupSnapshot g;
    g.pg = std::move(pg);
    g.desc = std::move(desc);
    g.backend = "nccl";
    g.rank = r.rank;
    g.group_rank = group_rank;
    g.size = size;
    g.last_completed_seq = 811;
    g.last_completed_op = "all_reduce";
    g.last_started_seq = r.behind ? 811 : 812;
    g.last_enqueued_seq = g.last_started_seq;
    g.ops_completed = 811;
    if (r.behind) {
      g.since_last_progress_s = 42.0;
    } else {
      const double age = a.pattern == "healthy" ? 0.01 : 41.9;
      g.inflight = 1;
      g.inflight_ops.push_back({OpType::AllReduce, 812, false, 1 << 20, age});
      g.since_last_progress_s = age;
    }
    out.push_back(std::move(g));
  };
  group("0", "default_pg", a.ranks, r.rank);
  if (a.host_groups) {
    group(std::to_string(1 + r.host), "tp", std::min(a.rph, a.ranks - r.host * a.rph),
          r.rank % a.rph);
  }
  return out;
}

// The addresses every simulated rank would read from the store, known here without asking.
class SimAddresses : public AddressSource {
 public:
  explicit SimAddresses(const Args& a) : a_(a) {}
  std::vector<RankAddress> addresses(const std::vector<int>& ranks) override {
    std::vector<RankAddress> out;
    for (int r : ranks) {
      RankAddress x;
      x.state = RankAddress::State::kKnown;
      x.host = host_ip(r / a_.rph);
      x.port = a_.base_port + r % a_.rph;
      x.url = fmt::format("http://{}:{}", x.host, x.port);
      out.push_back(std::move(x));
    }
    return out;
  }

 private:
  const Args& a_;
};

class Server {
 public:
  explicit Server(const Args& a) : a_(a), book_(a) {}
  int run();

 private:
  // epoll's data: a tag in the top byte, an id below (never a pointer: an id of something
  // closed earlier in the same batch is simply not found).
  enum Tag : uint64_t { kListen = 1, kConn = 2, kClient = 3, kStdin = 4 };
  static uint64_t ref(Tag t, uint64_t id) { return (uint64_t{t} << 56) | id; }
  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    Rank* rank = nullptr;
    std::string in, out;
    size_t sent = 0;
    bool writing = false;
    std::unique_ptr<TreeQuery> query;
  };
  struct Client {  // an exchange this process drives for one of its queries
    uint64_t id = 0;
    http::Exchange* x = nullptr;
    uint64_t conn = 0;
    int fd = -1;
    uint32_t events = 0;
  };

  void add(int fd, uint32_t ev, uint64_t data) {
    epoll_event e{};
    e.events = ev;
    e.data.u64 = data;
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &e);
  }
  Conn* conn(uint64_t id) {
    auto it = conns_.find(id);
    return it == conns_.end() ? nullptr : it->second.get();
  }
  void on_accept(Rank& r);
  void on_conn(Conn* c);
  void handle(Conn* c, const http::Request& req);
  void respond(Conn* c, int status, const std::string& body);
  void settle(Conn* c);
  void abandon(Conn* c);
  void drive(Conn* c, std::vector<http::Exchange*> xs);
  void watch(Client* cl);
  void client_done(uint64_t id);
  void expire_due();

  void count_fds() { peak_fds_ = std::max(peak_fds_, base_fds_ + conns_.size() + clients_.size()); }

  const Args& a_;
  SimAddresses book_;
  int ep_ = -1;
  uint64_t base_fds_ = 0;  // listeners, epoll, stdio, ...
  uint64_t peak_fds_ = 0;
  uint64_t next_id_ = 1;
  uint64_t abandoned_ = 0;  // requests whose asker left before the answer
  uint64_t cancelled_ = 0;  // asks to children ended because of that
  std::vector<Rank> ranks_;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<uint64_t, Client> clients_;
  using Due = std::pair<Steady::time_point, uint64_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  std::unique_ptr<FlightRecorder> fr_ahead_, fr_behind_;
  std::shared_ptr<GroupTrace> trace_ = std::make_shared<GroupTrace>();
};

void Server::on_accept(Rank& r) {
  for (;;) {
    const int fd = accept4(r.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (r.frozen) continue;  // a stopped process's kernel accepted it; nobody reads it
    auto c = std::make_unique<Conn>();
    c->id = next_id_++;
    c->fd = fd;
    c->rank = &r;
    add(fd, EPOLLIN | EPOLLRDHUP, ref(kConn, c->id));
    conns_[c->id] = std::move(c);
  }
}

// Sends the answer (the rest on EPOLLOUT) and closes. The caller does not touch `c` after.
void Server::respond(Conn* c, int status, const std::string& body) {
  http::Response res;
  res.status = status;
  res.set_content(body, "application/json");
  c->out = http::serialize(res);
  c->writing = true;
  epoll_event e{};
  e.events = EPOLLOUT;
  e.data.u64 = ref(kConn, c->id);
  epoll_ctl(ep_, EPOLL_CTL_MOD, c->fd, &e);
  on_conn(c);
}

void Server::on_conn(Conn* c) {
  if (c->writing) {
    while (c->sent < c->out.size()) {
      const ssize_t n =
          ::send(c->fd, c->out.data() + c->sent, c->out.size() - c->sent, MSG_NOSIGNAL);
      if (n > 0) {
        c->sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      break;
    }
    ::close(c->fd);
    conns_.erase(c->id);
    return;
  }
  if (c->query != nullptr) {
    // Asked already; the answer is being gathered. Readable now means the asker closed (it
    // sends nothing more): it gave up, so its node's asks are cancelled.
    char b;
    const ssize_t n = ::recv(c->fd, &b, 1, MSG_PEEK);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) abandon(c);
    return;
  }
  char buf[8192];
  bool closed = false;
  for (;;) {
    const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
      c->in.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    closed = n == 0 || errno != EAGAIN;
    break;
  }
  const size_t end = c->in.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (closed) {
      ::close(c->fd);
      conns_.erase(c->id);
    }
    return;
  }
  if (closed) {  // the asker gave up before its request was read: no work for it
    ++abandoned_;
    ::close(c->fd);
    conns_.erase(c->id);
    return;
  }
  http::Request req;
  const http::ParseResult p = http::parse_head(std::string_view(c->in).substr(0, end), 0, &req);
  if (p.status != 0) return respond(c, p.status, json{{"error", p.error}}.dump());
  handle(c, req);
}

void Server::handle(Conn* c, const http::Request& req) {
  const Rank& r = *c->rank;
  if (req.path == "/v1/tree/status") {
    const int asked = std::atoi(req.get_param_value("rank").c_str());
    if (asked != r.rank) return respond(c, 409, json{{"error", "another rank"}}.dump());
    TreeQueryOptions o;
    o.world_size = a_.ranks;
    o.level = Millis(std::atol(req.get_param_value("level_ms").c_str()));
    c->query = std::make_unique<TreeQuery>(
        tree_span_of(r.rank, a_.ranks),
        local_summary(r.rank, a_.ranks, fmt::format("node{}", r.host), snapshot_of(a_, r)), book_,
        o);
    drive(c, c->query->start());
    return settle(c);
  }
  if (req.path == "/v1/status") {
    return respond(c, 200,
                   json{{"rank", r.rank},
                        {"world_size", a_.ranks},
                        {"local_rank", r.rank % a_.rph},
                        {"host", fmt::format("node{}", r.host)},
                        {"pid", getpid()},
                        {"backend", "nccl"},
                        {"url", ""},
                        {"groups", groups_json(snapshot_of(a_, r))}}
                       .dump());
  }
  if (req.path == "/v1/flight_recorder") {
    const FlightRecorder& fr = r.behind ? *fr_behind_ : *fr_ahead_;
    return respond(c, 200, fr.dump_json(r.rank, "debug server request", 512));
  }
  respond(c, 404, json{{"error", "no such endpoint"}}.dump());
}

// Answers once the query has every part. The caller does not touch `c` after.
void Server::settle(Conn* c) {
  if (c->query == nullptr || !c->query->done()) return;
  const std::string body = summary_json(c->query->take()).dump();
  c->query.reset();
  respond(c, 200, body);
}

// The asker of `c` went away: its query's exchanges end here (their sockets close) and `c` is
// closed unanswered. The caller does not touch `c` after.
void Server::abandon(Conn* c) {
  ++abandoned_;
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->second.conn == c->id) {
      ++cancelled_;
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
  c->query.reset();  // closes the exchanges' sockets, which leaves them out of the epoll set
  ::close(c->fd);
  conns_.erase(c->id);
}

void Server::watch(Client* cl) {
  const int fd = cl->x->fd();
  const uint32_t ev = cl->x->wants() == POLLIN ? EPOLLIN : EPOLLOUT;
  if (fd == cl->fd && ev == cl->events) return;
  epoll_event e{};
  e.events = ev;
  e.data.u64 = ref(kClient, cl->id);
  // A new socket (the next address) replaced a closed one, which left the epoll set itself.
  epoll_ctl(ep_, fd != cl->fd ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &e);
  cl->fd = fd;
  cl->events = ev;
}

// Starts the exchanges; those that end at once (refused) are handed back to the query in turn,
// and whatever it starts instead, until none is left to start.
void Server::drive(Conn* c, std::vector<http::Exchange*> xs) {
  while (!xs.empty()) {
    std::vector<http::Exchange*> ended;
    for (http::Exchange* x : xs) {
      x->start();
      if (x->done()) {
        ended.push_back(x);
        continue;
      }
      Client cl;
      cl.id = next_id_++;
      cl.x = x;
      cl.conn = c->id;
      Client& at = clients_[cl.id] = cl;
      watch(&at);
      due_.push({x->request().deadline, cl.id});
    }
    xs.clear();
    for (http::Exchange* x : ended) {
      std::vector<http::Exchange*> more = c->query->finished(x);
      xs.insert(xs.end(), more.begin(), more.end());
    }
  }
}

void Server::client_done(uint64_t id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  Client cl = it->second;
  clients_.erase(it);
  Conn* c = conn(cl.conn);
  if (c == nullptr || c->query == nullptr) return;
  drive(c, c->query->finished(cl.x));
  settle(c);
}

void Server::expire_due() {
  const auto now = Steady::now();
  while (!due_.empty() && due_.top().first <= now) {
    const uint64_t id = due_.top().second;
    due_.pop();
    auto it = clients_.find(id);
    if (it == clients_.end()) continue;  // ended already
    it->second.x->expire();
    client_done(id);
  }
}

int Server::run() {
  set_log_level(LogLevel::Error);
  raise_fd_limit();
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  // Two recorders stand for every rank's (the dump names the rank it is served for).
  trace_->pg_id = "0";
  trace_->desc = "default_pg";
  trace_->backend = "nccl";
  for (int r = 0; r < a_.ranks; ++r) trace_->global_ranks.push_back(r);
  fr_ahead_ = std::make_unique<FlightRecorder>(64);
  fr_behind_ = std::make_unique<FlightRecorder>(64);
  fr_ahead_->add_group(trace_);
  fr_behind_->add_group(trace_);
  for (uint64_t seq = 780; seq <= 812; ++seq) {
    OpCall call;
    call.type = OpType::AllReduce;
    call.input = TensorView::cpu(nullptr, 1 << 18, DType::Float32);
    call.output = call.input;
    call.seq = seq;
    call.timeout = Millis(600000);
    for (FlightRecorder* fr : {fr_ahead_.get(), fr_behind_.get()}) {
      if (seq == 812 && fr == fr_behind_.get()) continue;
      const uint64_t id = fr->record(*trace_, seq, call);
      fr->mark_started(id);
      if (seq < 812) fr->mark_completed(id, false);
    }
  }
  const int behind_host = a_.ranks / (2 * a_.rph);
  std::vector<int> mine;
  if (a_.layout == "blocks") {
    for (int r = a_.proc * a_.per_proc; r < std::min(a_.ranks, (a_.proc + 1) * a_.per_proc); ++r)
      mine.push_back(r);
  } else {
    for (int r = a_.proc; r < a_.ranks; r += a_.procs) mine.push_back(r);
  }
  ranks_.reserve(mine.size());
  for (int r : mine) {
    Rank k;
    k.rank = r;
    k.host = r / a_.rph;
    k.frozen = a_.pattern == "frozen-rank" && r == 1;
    k.behind = a_.pattern == "lagging-host" && k.host == behind_host;
    k.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(k.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(a_.base_port + r % a_.rph));
    inet_pton(AF_INET, host_ip(k.host).c_str(), &sa.sin_addr);
    if (bind(k.listen_fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        listen(k.listen_fd, 256) != 0) {
      std::fprintf(stderr, "rank %d: cannot listen on %s:%d: %s\n", r, host_ip(k.host).c_str(),
                   a_.base_port + r % a_.rph, std::strerror(errno));
      return 3;
    }
    ranks_.push_back(k);
  }
  for (size_t i = 0; i < ranks_.size(); ++i) add(ranks_[i].listen_fd, EPOLLIN, ref(kListen, i));
  // What each rank's TreeAddressResolver reads at start: one batch per rank with children.
  const auto t0 = Steady::now();
  uint64_t reads = 0, keys = 0;
  {
    TcpStoreOptions o;
    o.port = static_cast<uint16_t>(a_.store_port);
    o.secret = "";
    auto store = std::make_shared<TcpStore>(o);
    StoreAddresses book(store);
    for (const Rank& k : ranks_) {
      std::vector<int> want;
      const std::vector<TreeSpan> kids = tree_children(tree_span_of(k.rank, a_.ranks));
      for (const TreeSpan& c : kids) want.push_back(c.lo);
      for (const TreeSpan& c : kids) {
        for (const TreeSpan& g : tree_children(c)) want.push_back(g.lo);
      }
      if (want.empty()) continue;
      if (!book.read(want).empty()) {
        std::fprintf(stderr, "rank %d: addresses missing from the store\n", k.rank);
        return 3;
      }
      ++reads;
      keys += want.size();
    }
  }
  std::printf("ready %lu %lu %.3f\n", static_cast<unsigned long>(reads),
              static_cast<unsigned long>(keys),
              std::chrono::duration<double>(Steady::now() - t0).count());
  std::fflush(stdout);
  // Serve until stdin closes (the driver ended).
  add(0, EPOLLIN, ref(kStdin, 0));
  base_fds_ = fd_count(getpid());
  epoll_event events[256];
  for (;;) {
    int timeout = -1;
    if (!due_.empty()) {
      const auto ms =
          std::chrono::ceil<std::chrono::milliseconds>(due_.top().first - Steady::now());
      timeout = static_cast<int>(std::max<int64_t>(0, ms.count()));
    }
    const int n = epoll_wait(ep_, events, 256, timeout);
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64 >> 56;
      const uint64_t id = events[i].data.u64 & ((uint64_t{1} << 56) - 1);
      if (tag == kStdin) {  // the driver is done: report and end
        std::printf("peak_fds %lu %lu %lu\n", static_cast<unsigned long>(peak_fds_),
                    static_cast<unsigned long>(abandoned_), static_cast<unsigned long>(cancelled_));
        std::fflush(stdout);
        return 0;
      }
      if (tag == kListen) {
        on_accept(ranks_[id]);
      } else if (tag == kConn) {
        if (Conn* c = conn(id)) on_conn(c);
      } else if (tag == kClient) {
        auto it = clients_.find(id);
        if (it == clients_.end()) continue;
        it->second.x->on_ready();
        if (it->second.x->done()) {
          client_done(id);
        } else {
          watch(&it->second);
        }
      }
    }
    expire_due();
    count_fds();
  }
}

// --- the driver -----------------------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  int in = -1;  // its stdin; closing it ends it
};

Child spawn(const std::vector<std::string>& args, bool pipe_in) {
  int to[2] = {-1, -1}, from[2];
  // Close-on-exec: a server must not hold another's stdin open (its end would never come).
  if ((pipe_in && pipe2(to, O_CLOEXEC) != 0) || pipe2(from, O_CLOEXEC) != 0) {
    std::perror("pipe");
    std::exit(3);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (pipe_in) {
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_addclose(&fa, to[1]);
  }
  posix_spawn_file_actions_adddup2(&fa, from[1], 1);
  posix_spawn_file_actions_addclose(&fa, from[0]);
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  Child c;
  if (posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", argv[0]);
    std::exit(3);
  }
  posix_spawn_file_actions_destroy(&fa);
  ::close(from[1]);
  c.out = fdopen(from[0], "r");
  if (pipe_in) {
    ::close(to[0]);
    c.in = to[1];
  }
  return c;
}

int driver(const Args& a, const char* self) {
  set_log_level(LogLevel::Error);
  raise_fd_limit();
  setenv("COLLIE_STORE_SECRET", "", 1);
  TcpStoreLimits limits;
  TcpStoreServer server("127.0.0.1", 0, limits, "");
  TcpStoreOptions o;
  o.port = server.port();
  o.secret = "";
  TcpStore store(o);
  {
    std::vector<std::string> keys;
    std::vector<Bytes> values;
    for (int r = 0; r < a.ranks; ++r) {
      keys.push_back(fmt::format("debug_server/{}", r));
      values.push_back(
          to_bytes(fmt::format("http://{}:{}", host_ip(r / a.rph), a.base_port + r % a.rph)));
    }
    store.multi_set(keys, values);
  }
  std::vector<Child> servers;
  const int procs = (a.ranks + a.per_proc - 1) / a.per_proc;
  for (int p = 0; p < procs; ++p) {
    servers.push_back(
        spawn({self, "--serve", "--ranks", std::to_string(a.ranks), "--proc", std::to_string(p),
               "--procs", std::to_string(procs), "--layout", a.layout, "--pattern", a.pattern,
               "--ranks-per-host", std::to_string(a.rph), "--base-port",
               std::to_string(a.base_port), "--store-port", std::to_string(server.port()),
               a.host_groups ? "--host-groups" : "--no-host-groups"},
              true));
  }
  uint64_t reads = 0, keys = 0;
  double read_s = 0;
  for (Child& c : servers) {
    unsigned long r = 0, k = 0;
    double s = 0;
    if (std::fscanf(c.out, "ready %lu %lu %lf", &r, &k, &s) != 3) {
      std::fprintf(stderr, "a server process did not start\n");
      return 3;
    }
    reads += r;
    keys += k;
    read_s = std::max(read_s, s);
  }
  const auto before = server.stats();
  double server_cpu0 = 0;
  for (const Child& c : servers) server_cpu0 += cpu_s(c.pid);
  const auto t0 = Steady::now();
  std::vector<std::string> query = {
      a.collie, "analyze", "--live", fmt::format("127.0.0.1:{}", server.port()), "--stall", "10s"};
  if (a.level_ms > 0) {  // else collie's default --timeout
    query.push_back("--timeout");
    query.push_back(fmt::format("{}ms", a.level_ms));
  }
  std::vector<std::string> json_query = query;
  json_query.push_back("--json");
  Child q = spawn(json_query, false);
  // Sample the querier and the servers while the query runs.
  uint64_t q_threads = 0, q_fds = 0, q_hwm = 0, s_fds = 0, s_fds_proc = 0;
  std::string out;
  const int qfd = fileno(q.out);
  fcntl(qfd, F_SETFL, O_NONBLOCK);
  int status = 0;
  for (;;) {
    char buf[65536];
    ssize_t n;
    while ((n = read(qfd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    q_threads = std::max(q_threads, status_kib(q.pid, "Threads:"));
    q_fds = std::max(q_fds, fd_count(q.pid));
    q_hwm = std::max(q_hwm, status_kib(q.pid, "VmHWM:"));
    if (waitpid(q.pid, &status, WNOHANG) == q.pid) break;
    if (Steady::now() - t0 > std::chrono::seconds(a.timeout_s)) {
      kill(q.pid, SIGKILL);
      waitpid(q.pid, &status, 0);
      break;
    }
    pollfd p{qfd, POLLIN, 0};
    poll(&p, 1, 10);
  }
  const double wall = std::chrono::duration<double>(Steady::now() - t0).count();
  {
    char buf[65536];
    ssize_t n;
    fcntl(qfd, F_SETFL, 0);
    while ((n = read(qfd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  const auto after = server.stats();
  uint64_t s_rss = 0;
  double server_cpu = -server_cpu0;
  for (const Child& c : servers) {
    s_rss += status_kib(c.pid, "VmHWM:");
    server_cpu += cpu_s(c.pid);
  }
  if (a.show) {
    Child t = spawn(query, false);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, t.out)) > 0) std::fwrite(buf, 1, n, stderr);
    waitpid(t.pid, nullptr, 0);
  }
  uint64_t abandoned = 0, cancelled_asks = 0;
  for (Child& c : servers) {
    ::close(c.in);
    unsigned long peak = 0, gone = 0, cancelled = 0;
    if (std::fscanf(c.out, " peak_fds %lu %lu %lu", &peak, &gone, &cancelled) == 3) {
      abandoned += gone;
      cancelled_asks += cancelled;
      s_fds += peak;
      s_fds_proc = std::max<uint64_t>(s_fds_proc, peak);
    }
    waitpid(c.pid, nullptr, 0);
  }
  json row = {
      {"ranks", a.ranks},
      {"pattern", a.pattern},
      {"collie", a.collie},
      {"host_groups", a.host_groups},
      {"layout", a.layout},
      {"level_ms", a.level_ms},
      {"exit", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)},
      {"wall_s", wall},
      {"querier_threads", q_threads},
      {"querier_fds", q_fds},
      {"querier_rss_mib", static_cast<double>(std::max<uint64_t>(q_hwm, ru.ru_maxrss)) / 1024},
      {"server_procs", servers.size()},
      {"server_fds", s_fds},  // the sum of each process's peak
      {"server_fds_max_proc", s_fds_proc},
      {"server_rss_mib", static_cast<double>(s_rss) / 1024},
      {"server_cpu_s", server_cpu},
      {"abandoned_requests", abandoned},   // their asker had given up: not answered
      {"cancelled_asks", cancelled_asks},  // asks of those that were under way, ended
      {"querier_cpu_s", static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                            (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6},
      {"store_requests", after.requests - before.requests},
      {"address_reads", reads},
      {"address_keys", keys},
      {"address_read_s", read_s}};
  try {
    const json j = json::parse(out);
    if (j.contains("answered")) {  // the tree's answer
      row["answered"] = j["answered"]["count"];
      row["levels"] = j["levels"];
      row["status_requests"] = j["requests"];
      row["culprits"] = j["culprits"]["text"];
      row["summary"] = j["summary"];
    } else {  // collie before the tree: the analyzer's report
      row["answered"] = j["ranks_with_dumps"].size();
      row["summary"] = j["summary"];
      row["culprits"] = j["culprits"].size() > 16
                            ? json(fmt::format("{} ranks", j["culprits"].size()))
                            : j["culprits"];
    }
  } catch (const std::exception& e) {
    row["error"] =
        fmt::format("querier output is not JSON ({} bytes): {}", out.size(), out.substr(0, 200));
  }
  std::printf("%s\n", row.dump().c_str());
  return 0;
}

Args parse(int argc, char** argv) {
  Args a;
  CLI::App app{"live status at N simulated ranks (scripts/bench/scale/live.sh)"};
  app.add_option("--ranks", a.ranks, "simulated ranks (>= 2)")
      ->required()
      ->check(CLI::Range(2, 1 << 24));
  app.add_option("--collie", a.collie, "the collie that queries")->capture_default_str();
  app.add_option("--pattern", a.pattern, "what the ranks are doing")
      ->check(CLI::IsMember({"lagging-host", "frozen-rank", "healthy"}))
      ->capture_default_str();
  app.add_option("--ranks-per-host", a.rph)->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--per-proc", a.per_proc, "ranks per server process")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--layout", a.layout, "which ranks each server process serves")
      ->check(CLI::IsMember({"interleaved", "blocks"}))
      ->capture_default_str();
  app.add_option("--level-ms", a.level_ms,
                 "the query's --timeout, per tree level (0: collie's default, not passed)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--host-groups,!--no-host-groups", a.host_groups, "one more group per host");
  app.add_flag("--show", a.show, "also print the text report on stderr");
  app.add_option("--base-port", a.base_port)->capture_default_str();
  app.add_option("--timeout-s", a.timeout_s)->capture_default_str();
  // A server process (started by the driver).
  app.add_flag("--serve", a.serve);
  app.add_option("--proc", a.proc);
  app.add_option("--procs", a.procs);
  app.add_option("--store-port", a.store_port);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return a;
}

}  // namespace
}  // namespace collie

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  const collie::Args a = collie::parse(argc, argv);
  if (a.serve) return collie::Server(a).run();
  return collie::driver(a, argv[0]);
}
