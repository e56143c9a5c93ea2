// `collie accept` over N simulated hosts (issue 39): what is real and what is simulated.
//
// Real: every rank runs the acceptance code itself (probes/accept.h: run_accept with the
// pairwise, env, stragglers and, on request, connectivity checks), as its own thread with its
// own TcpStore connection to one real TcpStore server (in this driver process): the host
// exchange, the plans, the results, the barriers and the reports go through the real control
// plane, and rank 0 builds and renders the real report (text, JSON, HTML).
// Simulated: the wire. The probes' groups use the backend "simwire" registered here: a send of
// B bytes from host a to host b sleeps latency + B / rate(a, b); a receive sleeps the latency;
// a collective sleeps log2(N) latencies. No data moves and the two ends do not wait for each
// other (each end's clock sees its own simulated cost), so a pair measures rate(a, b) without a
// network. rate() is nic_gbps with +-jitter, a bad host's links at bad_factor of it and one bad
// link (a pair of the survey round) at bad_factor too. The host names are node0000... with
// --ranks-per-host ranks each. ctx.measure_cpu_wait is off (the ranks share this process).
//
// Processes: the driver (store server), rank 0 alone, rank 1 alone, then the other ranks as
// threads, at most 1024 per process; so rank 0's and rank 1's peak RSS (VmHWM) are one rank's
// memory each, as on a real host.
//
//   scale_probes --hosts N [--ranks-per-host R] [--checks pairwise,env,stragglers,connectivity]
//                [--out DIR] [--timeout-s T] [--nic-gbps G] [--bytes B]
//
// Prints one JSON line: wall time, rank 0's and rank 1's peak RSS, the worker processes' RSS
// per rank, the store's requests and bytes, the report sizes, and where the text report first
// names the injected bad host and bad link (its line number) and what else it named.
#include <fmt/format.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/process_group.h"
#include "comm/registry.h"
#include "core/error.h"
#include "core/fd_limit.h"
#include "core/log.h"
#include "device/device_runtime.h"
#include "probes/accept.h"
#include "probes/accept_spec.h"
#include "probes/context.h"
#include "probes/schedule.h"
#include "reports/accept_report.h"
#include "store/tcp_store.h"

namespace collie {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

uint64_t vm_hwm_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof(line), f))
    if (std::strncmp(line, "VmHWM:", 6) == 0) kib = std::strtoull(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}

struct Args {
  int hosts = 0;
  int per_host = 1;
  std::string checks = "pairwise,env,stragglers";
  std::string out = "/tmp/collie-scale-probes";
  int timeout_s = 60;
  double nic_gbps = 1.0;
  int64_t bytes = 8 << 20;
  bool dead_host = false;
  // child mode
  int first = -1, count = 0;
  uint16_t port = 0;
  int world() const { return hosts * per_host; }
};

// The simulated cluster: which host is slow, which link is slow.
struct Sim {
  int per_host = 1;
  int hosts = 0;
  double nic_gbps = 1.0;
  double latency_us = 50;
  double bad_factor = 0.3;
  int bad_host = -1;
  int dead_host = -1;  // --dead-host: every p2p op with it fails at once
  int link_a = -1, link_b = -1;
  int host_of(int rank) const { return rank / per_host; }
  double rate(int from_rank, int to_rank, uint64_t salt) const {
    const int a = host_of(from_rank), b = host_of(to_rank);
    double r = nic_gbps;
    if (a == bad_host || b == bad_host) r *= bad_factor;
    if ((a == link_a && b == link_b) || (a == link_b && b == link_a)) r *= bad_factor;
    // +-3 % per message, deterministic.
    const uint64_t h = (static_cast<uint64_t>(from_rank) * 1000003u + to_rank + salt * 7919u) *
                       0x9E3779B97F4A7C15ull;
    return r * (1 + 0.03 * ((static_cast<double>(h >> 11) / 9007199254740992.0) * 2 - 1));
  }
};

Sim g_sim;

std::string host_name(int host) { return fmt::format("node{:04d}", host); }

void sleep_us(double us) {
  if (us > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(us * 1e3)));
}

// Host memory that is mapped but not touched until written: the probes allocate a `bytes`-sized
// message buffer per measurement, which a simulated wire never fills, so a rank's RSS here does
// not carry it (a real rank holds it during its measurement).
class SimRuntime final : public device::DeviceRuntime {
 public:
  collie::Device device() const override { return collie::Device{}; }
  bool host_accessible() const override { return true; }
  bool asynchronous() const override { return false; }
  device::Description describe() const override { return {}; }
  device::MemoryReport memory() const override { return {}; }
  device::Buffer allocate(size_t bytes) override {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw DeviceError(fmt::format("simwire: mmap of {} bytes", bytes));
    return device::Buffer(this, p, bytes);
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void synchronize() override {}
  std::unique_ptr<device::Timer> timer() override { return device::host_runtime().timer(); }

 protected:
  void release(void* data, size_t bytes) noexcept override { munmap(data, bytes); }
};

// The simulated wire (see the top of the file).
class SimWire : public ProcessGroup {
 public:
  explicit SimWire(GroupInfo i) : ProcessGroup(std::move(i)) {
    caps_.backend = "simwire";
    for (auto& o : caps_.ops) o = OpCapability{true, false, kAllDTypeBits, kAllReduceOpBits};
  }
  const Capabilities& capabilities() const override { return caps_; }
  device::DeviceRuntime& device_runtime() override { return runtime_; }

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override {
    auto w = std::make_shared<Work>(call.type, call.seq, call.timeout);
    const int me = info().global_ranks.at(static_cast<size_t>(info().rank));
    const double lat = g_sim.latency_us;
    const bool p2p = call.type == OpType::Send || call.type == OpType::Recv;
    const int peer = p2p ? info().global_ranks.at(static_cast<size_t>(call.peer)) : -1;
    if (p2p && g_sim.dead_host >= 0 &&
        (g_sim.host_of(me) == g_sim.dead_host || g_sim.host_of(peer) == g_sim.dead_host)) {
      sleep_us(lat);
      w->complete(std::make_exception_ptr(NetworkError(
          fmt::format("[Rank {}] simwire: connection to rank {} refused (simulated dead host {})",
                      me, peer, host_name(g_sim.dead_host)))));
      return w;
    }
    if (call.type == OpType::Send) {
      const double bytes = static_cast<double>(call.input.nbytes());
      sleep_us(lat + bytes / (g_sim.rate(me, peer, ++sends_) * 1e3));
    } else if (call.type == OpType::Recv) {
      sleep_us(lat);
      // Connectivity's round trip: group rank 0 sends its rank, rank 1 echoes it back.
      if (call.output.numel == 1 && call.output.dtype == DType::Int64)
        *static_cast<int64_t*>(call.output.data) = info().global_ranks.at(0);
    } else {
      sleep_us(lat * std::max(1.0, std::ceil(std::log2(std::max(1, info().size)))));
    }
    w->complete();
    return w;
  }

 private:
  Capabilities caps_;
  SimRuntime runtime_;
  uint64_t sends_ = 0;
};

void register_simwire() {
  BackendRegistration reg;
  reg.name = "simwire";
  reg.create = [](const BackendArgs& a) -> std::shared_ptr<ProcessGroup> {
    return std::make_shared<SimWire>(a.info);
  };
  reg.version = "simulated wire (scale_probes)";
  for (auto& o : reg.capabilities.ops)
    o = OpCapability{true, false, kAllDTypeBits, kAllReduceOpBits};
  reg.capabilities.backend = "simwire";
  register_backend(std::move(reg));
}

json spec_json(const Args& a) {
  json checks = json::array();
  auto has = [&](const char* c) {
    return ("," + a.checks + ",").find(fmt::format(",{},", c)) != std::string::npos;
  };
  if (has("connectivity"))
    checks.push_back({{"probe", "connectivity"}, {"rules", {{"all_reachable", true}}}});
  if (has("pairwise"))
    checks.push_back({{"probe", "pairwise"},
                      {"bytes", a.bytes},
                      {"iters", 3},
                      {"latency_iters", 3},
                      {"rotation", 0},
                      {"capacity_fraction", 0},
                      {"rules", {{"max_slow_hosts", 0}, {"max_slow_links", 0}}}});
  if (has("env")) checks.push_back({{"probe", "env"}, {"rules", {{"consistent", true}}}});
  if (has("stragglers"))
    checks.push_back({{"probe", "stragglers"},
                      {"iters", 10},
                      {"warmup", 1},
                      {"bytes", 4096},
                      {"rules", {{"max_stragglers", 0}}}});
  return {{"name", fmt::format("scale {} hosts", a.hosts)},
          {"timeout", fmt::format("{}s", a.timeout_s)},
          {"checks", checks}};
}

void write_file(const std::string& path, const std::string& s) {
  std::ofstream f(path, std::ios::binary);
  f << s;
}

// Rank 0's report: written out, and where the text first names the bad host and link.
json report_facts(const Args& a, const reports::AcceptReport& rep) {
  const std::string text = reports::accept_text(rep);
  const std::string js = reports::accept_json(rep).dump(2);
  const std::string html = reports::accept_html(rep);
  write_file(a.out + "/report.txt", text);
  write_file(a.out + "/report.json", js);
  write_file(a.out + "/report.html", html);
  const std::string bad_host = host_name(g_sim.dead_host >= 0 ? g_sim.dead_host : g_sim.bad_host);
  const std::string la = host_name(g_sim.link_a), lb = host_name(g_sim.link_b);
  int line_no = 0, host_line = 0, link_line = 0, lines = 0;
  std::istringstream in(text);
  std::string line;
  int named = 0, named_other = 0;
  while (std::getline(in, line)) {
    ++line_no;
    ++lines;
    const bool finding = line.rfind("SLOW ", 0) == 0 || line.rfind("DEAD ", 0) == 0 ||
                         line.rfind("FLAPPING ", 0) == 0 || line.rfind("INCONCLUSIVE ", 0) == 0 ||
                         line.find("reaches no other host") != std::string::npos;
    if (!finding) continue;
    ++named;
    const bool is_host = line.find(bad_host + " ") != std::string::npos ||
                         line.find(bad_host + ":") != std::string::npos;
    const bool is_link = line.find(la) != std::string::npos && line.find(lb) != std::string::npos;
    if (is_host && !host_line) host_line = line_no;
    if (is_link && !link_line) link_line = line_no;
    if (!is_host && !is_link) ++named_other;
  }
  return {
      {"verdict", rep.verdict()},   {"text_bytes", text.size()}, {"text_lines", lines},
      {"json_bytes", js.size()},    {"html_bytes", html.size()}, {"bad_host_line", host_line},
      {"bad_link_line", link_line}, {"findings", named},         {"other_findings", named_other}};
}

// One child process: ranks [first, first + count) as threads.
int child(const Args& a) {
  set_log_level(LogLevel::Error);
  raise_fd_limit();
  register_simwire();
  const probes::AcceptSpec spec = probes::parse_spec(spec_json(a));
  std::vector<std::string> errors(static_cast<size_t>(a.count));
  json facts;
  std::atomic<int64_t> end_max{0};
  auto body = [&](int rank) {
    try {
      TcpStoreOptions o;
      o.host = "127.0.0.1";
      o.port = a.port;
      o.timeout = std::chrono::seconds(a.timeout_s * 4);
      probes::ProbeContext ctx;
      ctx.store = std::make_shared<TcpStore>(o);
      ctx.rank = rank;
      ctx.world = a.world();
      ctx.backend = "simwire";
      ctx.timeout = std::chrono::seconds(a.timeout_s);
      ctx.measure_cpu_wait = false;
      probes::exchange_hosts(ctx, host_name(g_sim.host_of(rank)));
      const auto rep = probes::run_accept(ctx, spec);
      if (rank == 0) facts = report_facts(a, rep);
      int64_t end = now_ns(), cur = end_max.load();
      while (end > cur && !end_max.compare_exchange_weak(cur, end)) {
      }
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(rank - a.first)] = e.what();
    }
  };
  std::vector<pthread_t> ts(static_cast<size_t>(a.count));
  struct Job {
    const std::function<void(int)>* fn;
    int rank;
  };
  const std::function<void(int)> fn = body;
  std::vector<Job> jobs(static_cast<size_t>(a.count));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  for (int i = 0; i < a.count; ++i) {
    jobs[static_cast<size_t>(i)] = {&fn, a.first + i};
    const int rc = pthread_create(
        &ts[static_cast<size_t>(i)], &attr,
        [](void* p) -> void* {
          auto* j = static_cast<Job*>(p);
          (*j->fn)(j->rank);
          return nullptr;
        },
        &jobs[static_cast<size_t>(i)]);
    if (rc != 0) {
      std::fprintf(stderr, "pthread_create for rank %d: %s\n", a.first + i, std::strerror(rc));
      std::exit(3);
    }
  }
  for (auto& t : ts) pthread_join(t, nullptr);
  int failed = 0;
  for (const auto& e : errors)
    if (!e.empty() && failed++ < 3) std::fprintf(stderr, "rank error: %s\n", e.c_str());
  json line{{"first", a.first},
            {"count", a.count},
            {"failed", failed},
            {"rss_kib", vm_hwm_kib()},
            {"end_ns", end_max.load()}};
  if (!facts.is_null()) line["report"] = facts;
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
  return failed ? 1 : 0;
}

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Child spawn(const char* self, const Args& a, int first, int count) {
  int from[2];
  if (pipe(from) != 0) {
    std::perror("pipe");
    std::exit(3);
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(from[1], 1);
    close(from[0]);
    close(from[1]);
    std::vector<std::string> args = {self,
                                     "--child",
                                     "--hosts",
                                     std::to_string(a.hosts),
                                     "--ranks-per-host",
                                     std::to_string(a.per_host),
                                     "--checks",
                                     a.checks,
                                     "--out",
                                     a.out,
                                     "--timeout-s",
                                     std::to_string(a.timeout_s),
                                     "--nic-gbps",
                                     std::to_string(a.nic_gbps),
                                     "--bytes",
                                     std::to_string(a.bytes),
                                     "--first",
                                     std::to_string(first),
                                     "--count",
                                     std::to_string(count),
                                     "--port",
                                     std::to_string(a.port)};
    if (a.dead_host) args.push_back("--dead-host");
    std::vector<char*> argv;
    for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execv(self, argv.data());
    _exit(127);
  }
  close(from[1]);
  return {pid, fdopen(from[0], "r")};
}

int driver(const char* self, Args a) {
  set_log_level(LogLevel::Error);
  raise_fd_limit();
  if (a.world() < 2) {
    std::fprintf(stderr, "scale_probes: --hosts x --ranks-per-host must be >= 2\n");
    return 2;
  }
  std::system(fmt::format("mkdir -p '{}'", a.out).c_str());
  TcpStoreOptions so;
  so.host = "127.0.0.1";
  so.is_server = true;
  so.timeout = std::chrono::seconds(a.timeout_s * 4);
  TcpStore server(so);
  a.port = server.port();
  const int64_t t0 = now_ns();
  std::vector<std::pair<int, int>> parts = {{0, 1}, {1, 1}};
  for (int first = 2; first < a.world();) {
    const int count = std::min(1024, a.world() - first);
    parts.emplace_back(first, count);
    first += count;
  }
  std::vector<Child> kids;
  for (const auto& [first, count] : parts) kids.push_back(spawn(self, a, first, count));
  json out;
  int failed = 0;
  uint64_t worker_kib = 0;
  int worker_ranks = 0;
  int64_t end_max = 0;
  for (size_t k = 0; k < kids.size(); ++k) {
    char buf[1 << 16];
    std::string line;
    while (std::fgets(buf, sizeof(buf), kids[k].out)) line += buf;
    int status = 0;
    waitpid(kids[k].pid, &status, 0);
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception&) {
      std::fprintf(stderr, "scale_probes: process of ranks %d.. printed no result (status %d)\n",
                   parts[k].first, status);
      ++failed;
      continue;
    }
    failed += j.at("failed").get<int>();
    end_max = std::max<int64_t>(end_max, j.at("end_ns").get<int64_t>());
    if (k == 0) {
      out["rank0_rss_mib"] = j.at("rss_kib").get<double>() / 1024;
      if (j.contains("report")) out["report"] = j["report"];
    } else if (k == 1) {
      out["rank1_rss_mib"] = j.at("rss_kib").get<double>() / 1024;
    } else {
      worker_kib = std::max<uint64_t>(worker_kib, j.at("rss_kib").get<uint64_t>());
      worker_ranks = std::max(worker_ranks, j.at("count").get<int>());
    }
  }
  const auto st = server.server()->stats();
  out["hosts"] = a.hosts;
  out["ranks_per_host"] = a.per_host;
  out["ranks"] = a.world();
  out["checks"] = a.checks;
  out["wall_s"] = static_cast<double>((end_max > 0 ? end_max : now_ns()) - t0) / 1e9;
  out["failed_ranks"] = failed;
  out["worker_rss_mib"] = static_cast<double>(worker_kib) / 1024;
  out["worker_ranks"] = worker_ranks;
  out["store_requests"] = st.requests;
  out["store_bytes_in"] = st.bytes_in;
  out["store_bytes_out"] = st.bytes_out;
  out["server_rss_mib"] = static_cast<double>(vm_hwm_kib()) / 1024;
  std::printf("%s\n", out.dump().c_str());
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace collie

int main(int argc, char** argv) {
  using collie::Args;
  Args a;
  bool is_child = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "scale_probes: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--child") {
      is_child = true;
    } else if (k == "--hosts") {
      a.hosts = std::stoi(next());
    } else if (k == "--ranks-per-host") {
      a.per_host = std::stoi(next());
    } else if (k == "--checks") {
      a.checks = next();
    } else if (k == "--out") {
      a.out = next();
    } else if (k == "--timeout-s") {
      a.timeout_s = std::stoi(next());
    } else if (k == "--nic-gbps") {
      a.nic_gbps = std::stod(next());
    } else if (k == "--bytes") {
      a.bytes = std::stoll(next());
    } else if (k == "--dead-host") {
      a.dead_host = true;
    } else if (k == "--first") {
      a.first = std::stoi(next());
    } else if (k == "--count") {
      a.count = std::stoi(next());
    } else if (k == "--port") {
      a.port = static_cast<uint16_t>(std::stoi(next()));
    } else {
      std::fprintf(stderr,
                   "usage: scale_probes --hosts N [--ranks-per-host R] [--checks LIST] [--out DIR] "
                   "[--timeout-s T] [--nic-gbps G] [--bytes B] [--dead-host]\n");
      return 2;
    }
  }
  collie::g_sim.per_host = a.per_host;
  collie::g_sim.hosts = a.hosts;
  collie::g_sim.nic_gbps = a.nic_gbps;
  // The bad host: a third of the way in; the bad link: a pair of the survey round (rotation 0)
  // that does not touch it, so a quick pass measures it.
  collie::g_sim.bad_host = a.hosts >= 3 ? a.hosts / 3 : -1;
  if (a.dead_host) collie::g_sim.dead_host = a.hosts - 1;
  for (const auto& [x, y] : collie::probes::tournament_round(a.hosts, 0)) {
    if (x == collie::g_sim.bad_host || y == collie::g_sim.bad_host || x == 0 || y == 0) continue;
    collie::g_sim.link_a = x;
    collie::g_sim.link_b = y;
    if (a.hosts < 8) break;
    if (x >= a.hosts / 2) break;  // one away from the first pairs
  }
  if (is_child) return collie::child(a);
  return collie::driver(argv[0], a);
}
