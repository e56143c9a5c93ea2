// DETAIL's agreement at simulated scale: N ranks as threads (256 KiB stacks) of P processes
// (ceil(N / 3300): this machine allows 20,000 descriptors per process; a rank's tree and its
// pair (below) hold about 3 per rank when both ends live in one process, plus listening sockets
// while they connect), each rank on its own loopback address
// 127.(10 + r / 65536).(r / 256 % 256).(r % 256), every process's ranks rendezvousing through
// one TcpStore served by a separate process (one connection per process). Each rank builds the
// AgreementTree DETAIL builds and runs FingerprintAgreement::check on an all_reduce fingerprint: W
// unmeasured checks, then M measured ones.
//
// What a check costs one rank, measured per rank and reported over the ranks:
//   cpu     CPU time of the rank's thread per check (CLOCK_THREAD_CPUTIME_ID, the counter
//           RUSAGE_THREAD sums): the work the agreement asks of a rank. Wall time per check says
//           nothing about one rank here: N threads take turns on 2 cores, so it is ~N/2 times a
//           rank's work. CPU time still grows with N for reasons of the simulation: thousands of
//           threads run each other's caches cold and the scheduler's cost is charged to them.
//   pair    the control for that: right after each tree check, the same thread runs the same
//           check in a group of two (with rank r^1), which is constant work at any N. tree/pair
//           is the tree's cost with the machine's sharing divided out, measured in the same
//           threads, interleaved check by check.
//   frames/bytes sent and received per check, and descriptors held: counted exactly.
//   hops    2 * depth + 1: the messages on the critical path; the latency of a check on a real
//           cluster is hops times one message latency (the N = 2 row measures one hop here).
// Prints one row per N and the fitted growth exponent (least squares of log cost over log N).
// Usage: detail_agreement_bench [N ...]   (default 2 64 1024 16384; env CHECKS=M, WARMUP=W,
//        SPIN_US=S: the tree's spin budget, AgreementTree::set_spin; default its kDefaultSpin)
#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/stats.h"
#include "debug/agreement_tree.h"
#include "debug/fingerprint_agreement.h"
#include "store/tcp_store.h"

namespace {

using namespace collie;
using SteadyClock = std::chrono::steady_clock;

constexpr int kRanksPerProcess = 3300;
constexpr Millis kTimeout{600000};

// A Store over the process's one TcpStore client (whose requests are multiplexed, so thousands
// of threads may park waits on it) that counts the requests its rank made.
class CountingStore : public Store {
 public:
  explicit CountingStore(std::shared_ptr<Store> base) : Store(kTimeout), base_(std::move(base)) {}
  void set(const std::string& k, const Bytes& v) override { ++requests_, base_->set(k, v); }
  Bytes get(const std::string& k) override { return ++requests_, base_->get(k); }
  int64_t add(const std::string& k, int64_t d) override { return ++requests_, base_->add(k, d); }
  bool check(const std::vector<std::string>& k) override { return ++requests_, base_->check(k); }
  void wait(const std::vector<std::string>& keys, Millis timeout) override {
    ++requests_;
    base_->wait(keys, resolve(timeout));
  }
  Bytes compare_set(const std::string& k, const Bytes& e, const Bytes& d) override {
    return ++requests_, base_->compare_set(k, e, d);
  }
  bool delete_key(const std::string& k) override { return ++requests_, base_->delete_key(k); }
  int64_t num_keys() override { return base_->num_keys(); }
  void append(const std::string& k, const Bytes& v) override { ++requests_, base_->append(k, v); }
  std::vector<Bytes> multi_get(const std::vector<std::string>& k) override {
    return ++requests_, base_->multi_get(k);
  }
  void multi_set(const std::vector<std::string>& k, const std::vector<Bytes>& v) override {
    ++requests_, base_->multi_set(k, v);
  }
  GatherResult gather(const std::string& name, int member, int members, const Bytes& value,
                      GatherRead read, Millis timeout) override {
    return ++requests_, base_->gather(name, member, members, value, read, resolve(timeout));
  }
  std::vector<Bytes> set_and_gather(const std::string& drop, const std::string& key,
                                    const Bytes& value, const std::vector<std::string>& gather,
                                    Millis timeout) override {
    return ++requests_, base_->set_and_gather(drop, key, value, gather, resolve(timeout));
  }
  std::shared_ptr<Store> clone() override { return std::make_shared<CountingStore>(base_); }
  void interrupt() override {}
  int requests() const { return requests_; }
  using Store::set;
  using Store::wait;

 private:
  std::shared_ptr<Store> base_;
  int requests_ = 0;
};

struct RankStats {
  double cpu_us = 0, wall_us = 0;  // per check
  double pair_cpu_us = 0;          // per check of the control: a group of two
  double frames_sent = 0, frames_received = 0, bytes_sent = 0, bytes_received = 0;  // per check
  int descriptors = 0, setup_requests = 0, depth = 0;
  std::string error;
};

std::string address_of(int r) {
  return fmt::format("127.{}.{}.{}", 10 + (r >> 16), (r >> 8) & 255, r & 255);
}

struct RankJob {
  int rank, n, warmup, checks;
  std::shared_ptr<Store> client;
  RankStats* out;
};

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

Fingerprint all_reduce_fp(int rank) {
  Fingerprint f;
  f.rank = rank;
  f.op = OpType::AllReduce;
  f.has_tensor = true;
  f.count = 2;
  f.shape.ndim = 1;
  f.shape.dims[0] = 2;
  return f;
}

void run_rank(const RankJob& j) {
  try {
    auto store = std::make_shared<CountingStore>(j.client);
    auto tree = AgreementTree::connect(store, fmt::format("scale{}", j.n), j.rank, j.n,
                                       address_of(j.rank), kTimeout);
    j.out->setup_requests = store->requests();
    j.out->descriptors = tree->descriptors();
    j.out->depth = tree->depth();
    if (const char* spin = std::getenv("SPIN_US")) {
      tree->set_spin(std::chrono::microseconds(std::atoi(spin)));
    }
    FingerprintAgreement agreement(store, j.rank, j.n, {}, std::move(tree));
    // The control: this rank and its neighbour r^1 as a group of two of their own.
    FingerprintAgreement pair(
        store, j.rank & 1, 2, {},
        AgreementTree::connect(store, fmt::format("pair{}/{}", j.n, j.rank / 2), j.rank & 1, 2,
                               address_of(j.rank), kTimeout));
    Fingerprint f = all_reduce_fp(j.rank);
    auto one = [&](FingerprintAgreement& a, uint64_t seq, double* cpu, double* wall) {
      f.seq = seq;
      const double c0 = cpu ? thread_cpu_us() : 0;
      const auto w0 = SteadyClock::now();
      if (auto msg = a.check(f, {}, {}, kTimeout)) throw std::runtime_error(*msg);
      if (wall) *wall += std::chrono::duration<double, std::micro>(SteadyClock::now() - w0).count();
      if (cpu) *cpu += thread_cpu_us() - c0;
    };
    uint64_t seq = 0;
    for (int i = 0; i < j.warmup; ++i) {
      ++seq;
      one(agreement, seq, nullptr, nullptr);
      one(pair, seq, nullptr, nullptr);
    }
    const AgreementTree::Traffic before = agreement.tree()->traffic();
    for (int i = 0; i < j.checks; ++i) {
      ++seq;
      one(agreement, seq, &j.out->cpu_us, &j.out->wall_us);
      one(pair, seq, &j.out->pair_cpu_us, nullptr);
    }
    const double k = j.checks;
    j.out->cpu_us /= k;
    j.out->pair_cpu_us /= k;
    j.out->wall_us /= k;
    const AgreementTree::Traffic& t = agreement.tree()->traffic();
    j.out->frames_sent = static_cast<double>(t.frames_sent - before.frames_sent) / k;
    j.out->frames_received = static_cast<double>(t.frames_received - before.frames_received) / k;
    j.out->bytes_sent = static_cast<double>(t.bytes_sent - before.bytes_sent) / k;
    j.out->bytes_received = static_cast<double>(t.bytes_received - before.bytes_received) / k;
    // Nobody closes its tree while a neighbour may still read its last frame.
    if (store->add(fmt::format("scale{}/done", j.n), 1) == j.n) {
      store->set(fmt::format("scale{}/all_done", j.n), std::string_view("1"));
    }
    store->wait({fmt::format("scale{}/all_done", j.n)}, kTimeout);
  } catch (const std::exception& e) {
    j.out->error = e.what();
  }
}

// One process's share of the ranks, [lo, hi); writes one line per rank to `path`.
int run_process(int n, int lo, int hi, uint16_t port, int warmup, int checks,
                const std::string& path) {
  TcpStoreOptions o;
  o.port = port;
  o.timeout = kTimeout;
  auto client = std::make_shared<TcpStore>(o);
  std::vector<RankStats> stats(static_cast<size_t>(hi - lo));
  std::vector<RankJob> jobs;
  for (int r = lo; r < hi; ++r) jobs.push_back({r, n, warmup, checks, client, &stats[r - lo]});
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  std::vector<pthread_t> threads(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int rc = pthread_create(
        &threads[i], &attr,
        [](void* p) -> void* {
          run_rank(*static_cast<RankJob*>(p));
          return nullptr;
        },
        &jobs[i]);
    if (rc != 0) {
      std::fprintf(stderr, "detail_agreement_bench: pthread_create: %s\n", std::strerror(rc));
      return 1;
    }
  }
  for (auto& t : threads) pthread_join(t, nullptr);
  std::ofstream f(path);
  for (size_t i = 0; i < stats.size(); ++i) {
    const RankStats& s = stats[i];
    if (!s.error.empty()) {
      f << "E " << lo + static_cast<int>(i) << " " << s.error << "\n";
      continue;
    }
    f << "R " << s.cpu_us << " " << s.wall_us << " " << s.frames_sent << " " << s.frames_received
      << " " << s.bytes_sent << " " << s.bytes_received << " " << s.descriptors << " "
      << s.setup_requests << " " << s.depth << " " << s.pair_cpu_us << "\n";
  }
  return 0;
}

}  // namespace

// Serves the store in a process of its own until `hold` closes; reports the port on `report`.
[[noreturn]] void serve_store(int report, int hold) {
  TcpStoreOptions o;
  o.is_server = true;
  o.timeout = kTimeout;
  TcpStore server(o);
  const uint16_t port = server.port();
  if (::write(report, &port, sizeof(port)) != sizeof(port)) ::_exit(1);
  char c;
  while (::read(hold, &c, 1) > 0) {
  }
  ::_exit(0);
}

double fit_exponent(const std::vector<double>& n, const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double k = static_cast<double>(n.size());
  for (size_t i = 0; i < n.size(); ++i) {
    const double x = std::log(n[i]), v = std::log(std::max(y[i], 1e-9));
    sx += x;
    sy += v;
    sxx += x * x;
    sxy += x * v;
  }
  return (k * sxy - sx * sy) / (k * sxx - sx * sx);
}

struct Row {
  int n = 0, procs = 0, depth = 0;
  double cpu_p50 = 0, cpu_mean = 0, cpu_p90 = 0, cpu_max = 0, wall_us = 0;
  double pair_p50 = 0, pair_mean = 0;  // the control, in the same threads at the same time
  double frames_sent = 0, frames_received = 0, bytes_sent = 0, bytes_received = 0;
  int fds = 0, setup_requests = 0;
};

// Runs one N; returns false (after saying why) when a rank failed.
bool measure(int n, int warmup, int checks, Row& row) {
  int report[2], hold[2];
  if (::pipe(report) != 0 || ::pipe(hold) != 0) return false;
  const pid_t server = ::fork();
  if (server == 0) {
    ::close(hold[1]);
    serve_store(report[1], hold[0]);
  }
  ::close(hold[0]);
  uint16_t port = 0;
  if (::read(report[0], &port, sizeof(port)) != sizeof(port)) return false;
  const int procs = (n + kRanksPerProcess - 1) / kRanksPerProcess;
  std::vector<pid_t> kids;
  std::vector<std::string> files;
  for (int p = 0; p < procs; ++p) {
    const int lo = static_cast<int>(int64_t{n} * p / procs);
    const int hi = static_cast<int>(int64_t{n} * (p + 1) / procs);
    files.push_back(fmt::format("/tmp/collie_detail_scale_{}_{}_{}.txt", ::getpid(), n, p));
    const pid_t kid = ::fork();
    if (kid == 0) ::_exit(run_process(n, lo, hi, port, warmup, checks, files.back()));
    kids.push_back(kid);
  }
  bool ok = true;
  for (pid_t k : kids) {
    int st = 0;
    ::waitpid(k, &st, 0);
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  ::close(hold[1]);
  ::waitpid(server, nullptr, 0);
  std::vector<double> cpu, wall;
  std::vector<double> pair;
  row = Row{};
  row.n = n;
  row.procs = procs;
  for (const auto& path : files) {
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
      std::istringstream in(line);
      std::string tag;
      in >> tag;
      if (tag == "E") {
        if (ok) std::fprintf(stderr, "detail_agreement_bench: N=%d rank%s\n", n, line.c_str() + 1);
        ok = false;
        continue;
      }
      RankStats s;
      in >> s.cpu_us >> s.wall_us >> s.frames_sent >> s.frames_received >> s.bytes_sent >>
          s.bytes_received >> s.descriptors >> s.setup_requests >> s.depth >> s.pair_cpu_us;
      pair.push_back(s.pair_cpu_us);
      cpu.push_back(s.cpu_us);
      wall.push_back(s.wall_us);
      row.frames_sent = std::max(row.frames_sent, s.frames_sent);
      row.frames_received = std::max(row.frames_received, s.frames_received);
      row.bytes_sent = std::max(row.bytes_sent, s.bytes_sent);
      row.bytes_received = std::max(row.bytes_received, s.bytes_received);
      row.fds = std::max(row.fds, s.descriptors);
      row.setup_requests = std::max(row.setup_requests, s.setup_requests);
      row.depth = std::max(row.depth, s.depth);
    }
    std::remove(path.c_str());
  }
  if (!ok || static_cast<int>(cpu.size()) != n) {
    if (ok)
      std::fprintf(stderr, "detail_agreement_bench: N=%d: %zu of %d ranks reported\n", n,
                   cpu.size(), n);
    return false;
  }
  row.cpu_p50 = percentile(cpu, 0.5);
  row.cpu_p90 = percentile(cpu, 0.9);
  row.cpu_max = *std::max_element(cpu.begin(), cpu.end());
  double sum = 0;
  for (double c : cpu) sum += c;
  row.cpu_mean = sum / static_cast<double>(cpu.size());
  row.wall_us = percentile(wall, 0.5);
  row.pair_p50 = percentile(pair, 0.5);
  double pair_sum = 0;
  for (double c : pair) pair_sum += c;
  row.pair_mean = pair_sum / static_cast<double>(pair.size());
  return true;
}

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {2, 64, 1024, 16384};
  const int checks = std::getenv("CHECKS") ? std::atoi(std::getenv("CHECKS")) : 20;
  const int warmup = std::getenv("WARMUP") ? std::atoi(std::getenv("WARMUP")) : 5;
  for (int n : sizes) {
    if (n < 2 || n > 60000 || n % 2 != 0) {
      std::fprintf(stderr, "detail_agreement_bench: N must be even and in [2, 60000], got %d\n", n);
      return 2;
    }
  }
  if (checks < 1 || warmup < 0) {
    std::fprintf(stderr, "detail_agreement_bench: CHECKS must be >= 1 and WARMUP >= 0\n");
    return 2;
  }
  std::printf(
      "# DETAIL agreement per check (FingerprintAgreement::check of an all_reduce over the\n"
      "# AgreementTree), N simulated ranks as threads on loopback, %d measured checks after %d\n"
      "# unmeasured. cpu: CPU time of a rank's thread per check (CLOCK_THREAD_CPUTIME_ID, what\n"
      "# RUSAGE_THREAD sums), over the ranks. pair: the same check in a group of two (each rank\n"
      "# with rank r^1), run by the same threads right after each tree check: what one exchange\n"
      "# costs a thread when N threads share this machine; tree/pair is the tree's cost with\n"
      "# that sharing divided out. frames/bytes/fds: the most any rank moved per check or held;\n"
      "# hops = 2*depth+1 messages on the critical path; wall: median rank's wall time per tree\n"
      "# check (N threads take turns on the cores: ~N/2 times a rank's work)\n",
      checks, warmup);
  std::printf(
      "%6s %5s %5s %4s | %7s %7s %7s %7s | %7s %7s | %6s %6s | %4s %4s %5s %5s | %3s %6s %5s | "
      "%9s\n",
      "N", "procs", "depth", "hops", "cpu p50", "mean", "p90", "max", "pair50", "mean", "t/p50",
      "t/pmean", "frO", "frI", "B out", "B in", "fds", "2lg2N", "setup", "wall us");
  std::vector<Row> rows;
  for (int n : sizes) {
    Row r;
    if (!measure(n, warmup, checks, r)) return 1;
    rows.push_back(r);
    std::printf(
        "%6d %5d %5d %4d | %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f | %6.2f %6.2f | %4.1f %4.1f "
        "%5.0f %5.0f | %3d %6.1f %5d | %9.0f\n",
        r.n, r.procs, r.depth, 2 * r.depth + 1, r.cpu_p50, r.cpu_mean, r.cpu_p90, r.cpu_max,
        r.pair_p50, r.pair_mean, r.cpu_p50 / r.pair_p50, r.cpu_mean / r.pair_mean, r.frames_sent,
        r.frames_received, r.bytes_sent, r.bytes_received, r.fds,
        2 * std::log2(static_cast<double>(r.n)), r.setup_requests, r.wall_us);
    std::fflush(stdout);
  }
  if (rows.size() >= 2) {
    std::vector<double> ns, p50, mean, norm50, normmean, frames, hops, wall;
    for (const Row& r : rows) {
      ns.push_back(r.n);
      p50.push_back(r.cpu_p50);
      mean.push_back(r.cpu_mean);
      norm50.push_back(r.cpu_p50 / r.pair_p50);
      normmean.push_back(r.cpu_mean / r.pair_mean);
      frames.push_back(r.frames_sent + r.frames_received);
      hops.push_back(2 * r.depth + 1);
      wall.push_back(r.wall_us);
    }
    std::printf(
        "# growth exponent k (cost ~ N^k, least squares over the rows): cpu p50 %.3f, mean %.3f;\n"
        "#   tree/pair p50 %.3f, mean %.3f; frames per rank %.3f; hops %.3f; wall %.3f\n",
        fit_exponent(ns, p50), fit_exponent(ns, mean), fit_exponent(ns, norm50),
        fit_exponent(ns, normmean), fit_exponent(ns, frames), fit_exponent(ns, hops),
        fit_exponent(ns, wall));
    const Row &a = rows.front(), &b = rows.back();
    std::printf(
        "# N=%d over N=%d: cpu p50 %.2fx, mean %.2fx; tree/pair p50 %.2fx, mean %.2fx; frames "
        "%.2fx\n",
        b.n, a.n, b.cpu_p50 / a.cpu_p50, b.cpu_mean / a.cpu_mean,
        (b.cpu_p50 / b.pair_p50) / (a.cpu_p50 / a.pair_p50),
        (b.cpu_mean / b.pair_mean) / (a.cpu_mean / a.pair_mean),
        (b.frames_sent + b.frames_received) / (a.frames_sent + a.frames_received));
  }
  return 0;
}
