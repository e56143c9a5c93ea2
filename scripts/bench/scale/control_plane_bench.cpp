// The control plane at N simulated ranks (issue 37): N ranks as threads spread over a few
// processes on loopback, each rank with its own store connection, as a job's ranks have.
// One run = one scenario at one N; control_plane.sh sweeps N and fits the growth exponent.
//
//   scale_control_plane --scenario S --ranks N [--procs P] [--value-bytes B] [--timeout-s T]
//
// Scenarios (what every rank does, timed from a common start to the last rank's return):
//   keys-allgather  set one key, wait for all N keys, multi_get them (the pattern the probes'
//                   host exchange, DETAIL's store path and libgloo's connect used)
//   gather          Store::gather kAll of one value (the primitive that replaces it)
//   rendezvous      rendezvous() over tcp://, rank 0 serving the store, then NCCL's unique-id
//                   exchange (rank 0 sets 128 bytes, everyone gets them) and a store barrier:
//                   what init_process_group does for the NCCL backend
//   gloo-init       init_process_group with the Gloo backend (rendezvous + the full mesh)
//   new-group       new_group of each half of an N-rank world (every rank calls both)
//   monitored-barrier  monitored_barrier over the world group
//   dump-trigger    every rank fails at once: DumpService's failure trigger, with each rank's
//                   dump-request watcher parked on the store (how many requests and wake-ups)
// The store server runs in the driver (keys-allgather, gather, dump-trigger) or in rank 0's
// process (the others, as in a job); its counters (requests, bytes, connections) are read from
// the process that hosts it. Output: one JSON line (wall time, op_s: from the last rank entering
// the operation to the last leaving it, which for gloo-init/new-group/monitored-barrier leaves
// init_process_group out; per-rank p50/p99, the server's counters, peak RSS of the server's
// process and per rank, descriptors).
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/registry.h"
#include "comm/rendezvous.h"
#include "core/env.h"
#include "core/error.h"
#include "core/fd_limit.h"
#include "core/log.h"
#include "debug/dump_service.h"
#include "monitored_barrier/monitored_barrier.h"
#include "stack/init.h"
#include "store/prefix_store.h"
#include "store/socket_util.h"
#include "store/store_secret.h"
#include "store/tcp_store.h"

namespace collie {
namespace {

using namespace std::chrono_literals;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

uint64_t vm_hwm_kib(pid_t pid) {
  FILE* f = std::fopen(fmt::format("/proc/{}/status", pid).c_str(), "r");
  if (!f) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) kib = std::strtoull(line + 6, nullptr, 10);
  }
  std::fclose(f);
  return kib;
}

struct Args {
  std::string scenario;
  int ranks = 0;
  int procs = 0;  // 0 = one process per 2048 ranks (and rank 0 alone where it serves)
  int value_bytes = 100;
  int timeout_s = 600;
  // child mode
  int first = -1, count = 0;
  uint16_t port = 0;
};

// CPU time (user + system, ms) of this process's threads named `name` (/proc/self/task/*/stat).
uint64_t thread_cpu_ms(const char* name) {
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  const long hz = sysconf(_SC_CLK_TCK);
  uint64_t ticks = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    FILE* f = std::fopen(fmt::format("/proc/self/task/{}/stat", e->d_name).c_str(), "r");
    if (!f) continue;
    char buf[1024];
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char* open = std::strchr(buf, '(');
    const char* close = std::strrchr(buf, ')');
    if (!open || !close || std::string(open + 1, close) != name) continue;
    // After ") " come fields 3 (state) onwards; utime and stime are fields 14 and 15.
    const char* p = close + 2;
    for (int field = 3; field < 14 && p; ++field) {
      p = std::strchr(p, ' ');
      if (p) ++p;
    }
    if (!p) continue;
    char* end = nullptr;
    ticks += std::strtoull(p, &end, 10);
    ticks += std::strtoull(end, nullptr, 10);
  }
  closedir(d);
  return hz > 0 ? ticks * 1000 / static_cast<uint64_t>(hz) : 0;
}

void print_server(const TcpStoreServer& server) {
  const auto st = server.stats();
  std::printf(
      "server cpu_ms %lu requests %lu bytes_in %lu bytes_out %lu peak_conns %lu rss_kib %lu\n",
      static_cast<unsigned long>(thread_cpu_ms("collie-store")),
      static_cast<unsigned long>(st.requests), static_cast<unsigned long>(st.bytes_in),
      static_cast<unsigned long>(st.bytes_out), static_cast<unsigned long>(st.peak_connections),
      static_cast<unsigned long>(vm_hwm_kib(getpid())));
}

// Runs fn(rank) for ranks [first, first + count) on threads with small stacks.
void run_threads(int first, int count, const std::function<void(int)>& fn) {
  struct Job {
    const std::function<void(int)>* fn;
    int rank;
  };
  std::vector<Job> jobs(static_cast<size_t>(count));
  std::vector<pthread_t> ts(static_cast<size_t>(count));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  for (int i = 0; i < count; ++i) {
    jobs[static_cast<size_t>(i)] = {&fn, first + i};
    const int rc = pthread_create(
        &ts[static_cast<size_t>(i)], &attr,
        [](void* p) -> void* {
          auto* j = static_cast<Job*>(p);
          (*j->fn)(j->rank);
          return nullptr;
        },
        &jobs[static_cast<size_t>(i)]);
    if (rc != 0) {
      std::fprintf(stderr, "pthread_create for rank %d: %s\n", first + i, std::strerror(rc));
      std::exit(3);
    }
  }
  for (auto& t : ts) pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
}

TcpStoreOptions client_opts(uint16_t port, int timeout_s) {
  TcpStoreOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.timeout = std::chrono::seconds(timeout_s);
  return o;
}

// A process group that is only its store (no collectives): new_group and monitored_barrier
// measured at the store, without a backend's own connect.
class StoreOnlyGroup : public ProcessGroup {
 public:
  explicit StoreOnlyGroup(GroupInfo i) : ProcessGroup(std::move(i)) {}
  const Capabilities& capabilities() const override {
    static const Capabilities none;
    return none;
  }

 protected:
  std::shared_ptr<Work> run(const OpCall&) override {
    throw InvalidArgument("the scale benchmark's group runs no collectives");
  }
};

// The ranks of one child process. Timed section: from `go` (read from stdin) to each rank's
// return. Prints "ranks <first> <count> end_max_ns <t> rank_us <list...>" on stdout, and the
// server's counters when this process hosts it.
int child(const Args& a) {
  set_log_level(LogLevel::Error);
  raise_fd_limit();
  const int n = a.ranks;
  std::vector<std::shared_ptr<Store>> stores(static_cast<size_t>(a.count));
  std::vector<std::shared_ptr<ProcessGroup>> groups(static_cast<size_t>(a.count));
  std::vector<int64_t> took(static_cast<size_t>(a.count), 0);
  std::vector<std::string> errors(static_cast<size_t>(a.count));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int64_t> t0{0};
  std::atomic<int64_t> end_max{0};
  std::atomic<int64_t> op_start_max{0};  // the last rank to enter the timed operation
  auto note_max = [](std::atomic<int64_t>& m, int64_t v) {
    int64_t cur = m.load();
    while (v > cur && !m.compare_exchange_weak(cur, v)) {
    }
  };
  const bool store_first =
      a.scenario == "keys-allgather" || a.scenario == "gather" || a.scenario == "dump-trigger";
  // Ranks sleep until the common start (a futex wait; thousands of threads polling a flag would
  // starve the store server they are about to measure).
  auto wait_go = [&] {
    ready.fetch_add(1);
    go.wait(false);
  };
  auto body = [&](int rank) {
    const size_t me = static_cast<size_t>(rank - a.first);
    try {
      std::shared_ptr<Store> s;
      if (store_first) s = std::make_shared<TcpStore>(client_opts(a.port, a.timeout_s));
      wait_go();
      const int64_t start = now_ns();
      int64_t op_start = start;  // after init_process_group for the scenarios that need one
      const Bytes value(static_cast<size_t>(a.value_bytes), static_cast<uint8_t>(rank));
      if (a.scenario == "keys-allgather") {
        std::vector<std::string> keys;
        for (int r = 0; r < n; ++r) keys.push_back(fmt::format("k/{}", r));
        s->set(keys[static_cast<size_t>(rank)], value);
        s->wait(keys);
        auto vals = s->multi_get(keys);
        if (vals.size() != static_cast<size_t>(n)) throw Error("short multi_get");
      } else if (a.scenario == "gather") {
        auto r = s->gather("g", rank, n, value, Store::GatherRead::kAll, kUseGroupTimeout);
        if (!r.complete || r.values.size() != static_cast<size_t>(n)) throw Error("gather");
      } else if (a.scenario == "dump-trigger") {
        // Every rank's watcher parks on the first request's key, then every rank fails.
        auto watcher = s->clone();
        std::thread w([&] { watcher->wait({dump_request_key(1)}); });
        std::this_thread::sleep_for(200ms);  // the watchers park before the failures
        const Bytes mine = to_bytes(fmt::format("rank {}", rank));
        if (s->compare_set(kDumpFailureKey, Bytes{}, mine) == mine) {
          const int64_t k = s->add(kDumpRequestKey, 1);
          s->set(dump_request_key(k), "failure");
        }
        w.join();
      } else if (a.scenario == "rendezvous") {
        RendezvousRequest req;
        req.init_method = fmt::format("tcp://127.0.0.1:{}", a.port);
        req.rank = rank;
        req.world_size = n;
        req.timeout = std::chrono::seconds(a.timeout_s);
        Rendezvous rd = rendezvous(req, Env::process());
        s = rd.store;
        // NCCL's init: rank 0 makes the unique id, every rank reads it, all meet.
        if (rank == 0) s->set("nccl/unique_id", Bytes(128, 7));
        if (s->get("nccl/unique_id").size() != 128) throw Error("unique id");
        store_barrier(*s, "nccl/init", rank, n, req.timeout);
      } else {
        // gloo-init, new-group, monitored-barrier: through init_process_group, as a job does.
        InitOptions o;
        o.backend = a.scenario == "gloo-init" ? "gloo" : "store-only";
        o.init_method = fmt::format("tcp://127.0.0.1:{}", a.port);
        o.rank = rank;
        o.world_size = n;
        o.timeout = std::chrono::seconds(a.timeout_s);
        auto pg = init_process_group(o);
        s = dynamic_cast<PrefixStore&>(*pg->info().store).base();
        if (a.scenario != "gloo-init") op_start = now_ns();  // gloo-init times the init itself
        if (a.scenario == "monitored-barrier") {
          monitored_barrier(*pg, o.timeout, true);
        } else if (a.scenario == "new-group") {
          std::vector<int> lo, hi;
          for (int r = 0; r < n; ++r) (r < n / 2 ? lo : hi).push_back(r);
          auto g1 = new_group(*pg, lo);
          auto g2 = new_group(*pg, hi);
          if (!g1 && !g2) throw Error("new_group: in neither half");
        }
        groups[me] = pg;
      }
      const int64_t end = now_ns();
      took[me] = end - start;
      note_max(end_max, end);
      note_max(op_start_max, op_start);
      stores[me] = s;
    } catch (const std::exception& e) {
      errors[me] = e.what();
      ready.fetch_add(1);
    }
  };
  std::thread runner([&] { run_threads(a.first, a.count, body); });
  while (ready.load() < a.count) std::this_thread::sleep_for(2ms);
  std::printf("ready\n");
  std::fflush(stdout);
  char line[64];
  if (!std::fgets(line, sizeof(line), stdin)) return 2;
  go.store(true);
  go.notify_all();
  runner.join();
  int failed = 0;
  for (const auto& e : errors) {
    if (!e.empty() && failed++ < 3) std::fprintf(stderr, "rank error: %s\n", e.c_str());
  }
  std::string us;
  for (int64_t t : took) us += fmt::format(" {}", t / 1000);
  std::printf(
      "ranks %d %d failed %d end_max_ns %ld op_start_max_ns %ld rss_kib %lu fds %lu rank_us%s\n",
      a.first, a.count, failed, static_cast<long>(end_max.load()),
      static_cast<long>(op_start_max.load()), static_cast<unsigned long>(vm_hwm_kib(getpid())),
      static_cast<unsigned long>(open_fds()), us.c_str());
  std::fflush(stdout);
  // Keep the store (and a serving rank 0) up until the driver has heard every process; then
  // the process hosting the server reports its counters.
  if (!std::fgets(line, sizeof(line), stdin)) return failed ? 1 : 0;
  for (const auto& st : stores) {
    auto* t = dynamic_cast<TcpStore*>(st.get());
    if (!t || !t->server()) continue;
    print_server(*t->server());
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace collie

namespace collie {
namespace {

struct Child {
  pid_t pid = -1;
  FILE* in = nullptr;   // its stdin
  FILE* out = nullptr;  // its stdout
  int ranks = 0;
};

Child spawn(const char* self, const Args& a, int first, int count) {
  int to[2], from[2];
  if (pipe(to) != 0 || pipe(from) != 0) {
    std::perror("pipe");
    std::exit(3);
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[0]);
    close(to[1]);
    close(from[0]);
    close(from[1]);
    const std::vector<std::string> args = {self,
                                           "--child",
                                           "--scenario",
                                           a.scenario,
                                           "--ranks",
                                           std::to_string(a.ranks),
                                           "--first",
                                           std::to_string(first),
                                           "--count",
                                           std::to_string(count),
                                           "--port",
                                           std::to_string(a.port),
                                           "--value-bytes",
                                           std::to_string(a.value_bytes),
                                           "--timeout-s",
                                           std::to_string(a.timeout_s)};
    std::vector<char*> argv;
    for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execv(self, argv.data());
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  Child c;
  c.pid = pid;
  c.in = fdopen(to[1], "w");
  c.out = fdopen(from[0], "r");
  c.ranks = count;
  return c;
}

bool read_line(FILE* f, std::string& line) {
  char buf[1 << 16];
  line.clear();
  while (std::fgets(buf, sizeof(buf), f)) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      return true;
    }
  }
  return !line.empty();
}

uint64_t field(const std::string& line, const std::string& name) {
  const auto at = line.find(" " + name + " ");
  if (at == std::string::npos) return 0;
  return std::strtoull(line.c_str() + at + name.size() + 2, nullptr, 10);
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

int driver(const char* self, Args a) {
  set_log_level(LogLevel::Warning);                            // the server's rejections, if any
  setenv("COLLIE_STORE_SECRET", "collie-scale-benchmark", 0);  // as collie launch shares one
  raise_fd_limit();
  const bool driver_serves =
      a.scenario == "keys-allgather" || a.scenario == "gather" || a.scenario == "dump-trigger";
  std::unique_ptr<TcpStoreServer> server;
  if (driver_serves) {
    TcpStoreLimits lim;
    lim.max_store_bytes = size_t{4} << 30;
    lim.max_total_buffered_bytes = size_t{8} << 30;
    server = std::make_unique<TcpStoreServer>("127.0.0.1", 0, lim, store_secret_from_env());
    a.port = server->port();
  } else {
    // rank 0 serves on a port chosen here
    const int fd = net::listen_on("127.0.0.1", 0, &a.port);
    close(fd);
  }
  const int per = 2048;
  std::vector<Child> kids;
  int first = 0;
  if (!driver_serves) {
    kids.push_back(spawn(self, a, 0, 1));  // rank 0 alone: it holds a connection per rank
    first = 1;
  }
  int rest = a.ranks - first;
  const int procs = a.procs > 0 ? a.procs : std::max(1, (rest + per - 1) / per);
  for (int p = 0; p < procs && rest > 0; ++p) {
    const int count = (rest + (procs - p) - 1) / (procs - p);
    kids.push_back(spawn(self, a, first, count));
    first += count;
    rest -= count;
  }
  std::string line;
  for (auto& k : kids) {
    if (!read_line(k.out, line) || line != "ready") {
      std::fprintf(stderr, "a child did not get ready: '%s'\n", line.c_str());
      return 3;
    }
  }
  const int64_t t0 = now_ns();
  for (auto& k : kids) {
    std::fputs("go\n", k.in);
    std::fflush(k.in);
  }
  int64_t end_max = 0, op_start_max = 0;
  uint64_t rss_max = 0, fds_max = 0, failed = 0;
  size_t max_ranks_per_proc = 0;
  std::vector<double> rank_ms;
  for (auto& k : kids) {
    while (read_line(k.out, line) && line.rfind("ranks ", 0) != 0) {
    }
    end_max = std::max<int64_t>(end_max, static_cast<int64_t>(field(line, "end_max_ns")));
    op_start_max =
        std::max<int64_t>(op_start_max, static_cast<int64_t>(field(line, "op_start_max_ns")));
    failed += field(line, "failed");
    rss_max = std::max(rss_max, field(line, "rss_kib"));
    fds_max = std::max(fds_max, field(line, "fds"));
    max_ranks_per_proc = std::max(max_ranks_per_proc, static_cast<size_t>(k.ranks));
    const auto at = line.find("rank_us");
    if (at != std::string::npos) {
      const char* p = line.c_str() + at + 7;
      char* e = nullptr;
      for (;;) {
        const double us = std::strtod(p, &e);
        if (e == p) break;
        rank_ms.push_back(us / 1000.0);
        p = e;
      }
    }
  }
  const double wall = static_cast<double>(end_max - t0) / 1e9;
  // From the last rank entering the operation to the last leaving it: the operation's own
  // latency once every rank is there (for the init-based scenarios, without the init).
  const double op_s = static_cast<double>(end_max - op_start_max) / 1e9;
  uint64_t requests = 0, bytes_in = 0, bytes_out = 0, conns = 0, server_rss = 0, server_cpu = 0;
  for (auto& k : kids) {
    std::fputs("stats\n", k.in);
    std::fflush(k.in);
  }
  for (auto& k : kids) {
    while (read_line(k.out, line)) {
      if (line.rfind("server ", 0) == 0) {
        server_cpu = field(line, "cpu_ms");
        requests = field(line, "requests");
        bytes_in = field(line, "bytes_in");
        bytes_out = field(line, "bytes_out");
        conns = field(line, "peak_conns");
        server_rss = field(line, "rss_kib");
      }
    }
    std::fclose(k.in);
    std::fclose(k.out);
    int status = 0;
    waitpid(k.pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (server) {
    const auto st = server->stats();
    requests = st.requests;
    bytes_in = st.bytes_in;
    bytes_out = st.bytes_out;
    conns = st.peak_connections;
    server_rss = vm_hwm_kib(getpid());
    server_cpu = thread_cpu_ms("collie-store");
  }
  std::printf(
      "{\"scenario\": \"%s\", \"ranks\": %d, \"procs\": %zu, \"wall_s\": %.4f, \"op_s\": %.4f, "
      "\"rank_p50_ms\": "
      "%.3f, \"rank_p99_ms\": %.3f, \"requests\": %lu, \"requests_per_rank\": %.2f, "
      "\"bytes_in\": %lu, \"bytes_out\": %lu, \"server_peak_conns\": %lu, "
      "\"server_rss_mib\": %.1f, \"server_cpu_s\": %.3f, \"rank_process_rss_mib\": %.1f, "
      "\"ranks_per_process\": %zu, "
      "\"rank_process_fds\": %lu, \"failed\": %lu}\n",
      a.scenario.c_str(), a.ranks, kids.size(), wall, op_s, pct(rank_ms, 0.5), pct(rank_ms, 0.99),
      static_cast<unsigned long>(requests),
      static_cast<double>(requests) / static_cast<double>(a.ranks),
      static_cast<unsigned long>(bytes_in), static_cast<unsigned long>(bytes_out),
      static_cast<unsigned long>(conns), static_cast<double>(server_rss) / 1024.0,
      static_cast<double>(server_cpu) / 1000.0, static_cast<double>(rss_max) / 1024.0,
      max_ranks_per_proc, static_cast<unsigned long>(fds_max), static_cast<unsigned long>(failed));
  return failed ? 1 : 0;
}

// The backend new-group and monitored-barrier measure: a group that is its store.
bool register_store_only() {
  BackendRegistration reg;
  reg.name = "store-only";
  reg.create = [](const BackendArgs& b) -> std::shared_ptr<ProcessGroup> {
    return std::make_shared<StoreOnlyGroup>(b.info);
  };
  reg.version = "scale benchmark";
  return register_backend(std::move(reg));
}
const bool kRegistered = register_store_only();

}  // namespace
}  // namespace collie

int main(int argc, char** argv) {
  collie::Args a;
  bool is_child = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--child") {
      is_child = true;
    } else if (k == "--scenario") {
      a.scenario = next();
    } else if (k == "--ranks") {
      a.ranks = std::stoi(next());
    } else if (k == "--procs") {
      a.procs = std::stoi(next());
    } else if (k == "--value-bytes") {
      a.value_bytes = std::stoi(next());
    } else if (k == "--timeout-s") {
      a.timeout_s = std::stoi(next());
    } else if (k == "--first") {
      a.first = std::stoi(next());
    } else if (k == "--count") {
      a.count = std::stoi(next());
    } else if (k == "--port") {
      a.port = static_cast<uint16_t>(std::stoi(next()));
    } else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  static const char* kScenarios[] = {"keys-allgather", "gather",    "rendezvous",
                                     "gloo-init",      "new-group", "monitored-barrier",
                                     "dump-trigger"};
  if (std::find(std::begin(kScenarios), std::end(kScenarios), a.scenario) == std::end(kScenarios) ||
      a.ranks < 1) {
    std::fprintf(stderr,
                 "usage: scale_control_plane --scenario keys-allgather|gather|rendezvous|"
                 "gloo-init|new-group|monitored-barrier|dump-trigger --ranks N [--procs P] "
                 "[--value-bytes B] [--timeout-s T]\n");
    return 2;
  }
  return is_child ? collie::child(a) : collie::driver("/proc/self/exe", a);
}
