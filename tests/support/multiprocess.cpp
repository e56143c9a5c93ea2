#include "support/multiprocess.h"

#include <arpa/inet.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "comm/registry.h"
#include "core/env.h"
#include "stack/init.h"
#include "stack/stack.h"
#include "store/hash_store.h"
#include "store/prefix_store.h"
#include "store/store.h"
#include "support/test_backends.h"

namespace collie::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Thrown by die() in thread mode; never escapes run_ranks.
struct RankDied {};

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(fmt::format("run_ranks: no free port: {}", std::strerror(errno)));
  }
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Ranks close their sockets only after every rank is done (or died), so a fast rank cannot
// reset connections that slower peers still read from. Dying ranks arrive without waiting.
constexpr const char* kExitCount = "run_ranks/exit/count";
constexpr const char* kExitDone = "run_ranks/exit/done";

void arrive_at_exit(ProcessGroup& pg) {
  Store& s = *pg.info().store;
  if (s.add(kExitCount, 1) == pg.size()) s.set(kExitDone, "1");
}

void exit_barrier(ProcessGroup& pg, Millis timeout) {
  try {
    arrive_at_exit(pg);
    pg.info().store->wait({kExitDone}, timeout);
  } catch (const std::exception&) {
    // A peer failed or the store's host left first; the result is already decided.
  }
}

// Runs the body and returns its outcome; shared by both modes.
RankResult run_body(RankContext& ctx, const std::function<void(RankContext&)>& body) {
  RankResult r;
  r.rank = ctx.rank;
  try {
    body(ctx);
    r.status = RankStatus::Passed;
  } catch (const RankDied&) {
    r.status = RankStatus::Died;
    r.message = "died on purpose";
  } catch (const std::exception& e) {
    r.status = RankStatus::Failed;
    r.message = e.what();
    r.error = std::current_exception();
  } catch (...) {
    r.status = RankStatus::Failed;
    r.message = "unknown exception";
    r.error = std::current_exception();
  }
  return r;
}

[[noreturn]] void child_main(int rank, int world, int port, int fd, const RunOptions& opts,
                             const std::function<void(RankContext&)>& body) {
  RankContext ctx;
  ctx.rank = rank;
  ctx.world_size = world;
  ctx.mode = Mode::Processes;
  RankResult r;
  r.rank = rank;
  for (const auto& [k, v] : opts.env) ::setenv(k.c_str(), v.c_str(), 1);
  try {
    InitOptions io;
    io.backend = opts.backend;
    io.init_method = fmt::format("tcp://127.0.0.1:{}", port);
    io.rank = rank;
    io.world_size = world;
    io.timeout = opts.group_timeout;
    ctx.pg = init_process_group(io);
    r = run_body(ctx, body);
    if (r.status != RankStatus::Died) exit_barrier(*ctx.pg, opts.group_timeout);
    if (ctx.pg) ctx.pg->shutdown();
    ctx.pg.reset();
  } catch (const std::exception& e) {
    r.status = RankStatus::Failed;
    r.message = fmt::format("init_process_group: {}", e.what());
  }
  // Record: status byte, then the message.
  write_all(fd, std::string(1, static_cast<char>('0' + static_cast<int>(r.status))) + r.message);
  ::close(fd);
  std::fflush(nullptr);  // _exit skips stdio; keep what the rank printed
  ::_exit(0);
}

RunResult run_processes(int world, const std::function<void(RankContext&)>& body,
                        const RunOptions& opts) {
  RunResult out;
  out.mode = Mode::Processes;
  const int port = free_port();
  std::vector<pid_t> pids(world, -1);
  std::vector<int> fds(world, -1);
  std::vector<std::string> data(world);
  std::vector<bool> open(world, true);
  for (int r = 0; r < world; ++r) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("run_ranks: pipe failed");
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      for (int i = 0; i < r; ++i) ::close(fds[i]);
      child_main(r, world, port, p[1], opts, body);
    }
    ::close(p[1]);
    pids[r] = pid;
    fds[r] = p[0];
  }
  const auto deadline = Clock::now() + opts.deadline;
  int remaining = world;
  while (remaining > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    std::vector<pollfd> pfds;
    std::vector<int> ranks;
    for (int r = 0; r < world; ++r) {
      if (open[r]) {
        pfds.push_back(pollfd{fds[r], POLLIN, 0});
        ranks.push_back(r);
      }
    }
    int n = ::poll(pfds.data(), pfds.size(), static_cast<int>(std::min<long long>(left, 1000)));
    if (n <= 0) continue;
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (!pfds[i].revents) continue;
      const int r = ranks[i];
      char buf[4096];
      ssize_t got = ::read(fds[r], buf, sizeof(buf));
      if (got > 0) {
        data[r].append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        open[r] = false;
        ::close(fds[r]);
        --remaining;
      }
    }
  }
  for (int r = 0; r < world; ++r) {
    RankResult rr;
    rr.rank = r;
    if (open[r]) {
      ::kill(pids[r], SIGKILL);
      ::close(fds[r]);
      rr.status = RankStatus::Hung;
      rr.message = fmt::format("killed after {} ms", opts.deadline.count());
    } else if (data[r].empty()) {
      rr.status = RankStatus::Died;
      rr.message = "exited without reporting";
    } else {
      rr.status = static_cast<RankStatus>(data[r][0] - '0');
      rr.message = data[r].substr(1);
    }
    int st = 0;
    ::waitpid(pids[r], &st, 0);
    if (rr.status == RankStatus::Died && WIFSIGNALED(st)) {
      rr.message = fmt::format("killed by signal {}", WTERMSIG(st));
    }
    out.ranks.push_back(std::move(rr));
  }
  return out;
}

RunResult run_threads(int world, const std::function<void(RankContext&)>& body,
                      const RunOptions& opts) {
  RunResult out;
  out.mode = Mode::Threads;
  const BackendRegistration* reg = find_backend(opts.backend);
  if (!reg) throw std::runtime_error(fmt::format("run_ranks: no backend '{}'", opts.backend));
  auto store = std::make_shared<HashStore>(opts.group_timeout);
  // No rank thread exists yet, so changing the environment here races with nothing.
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  for (const auto& [k, v] : opts.env) {
    const char* old = std::getenv(k.c_str());
    saved.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(k.c_str(), v.c_str(), 1);
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<RankResult> results(world);
  std::vector<bool> done(world, false);
  std::vector<std::shared_ptr<ProcessGroup>> groups(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      RankContext ctx;
      ctx.rank = r;
      ctx.world_size = world;
      ctx.mode = Mode::Threads;
      RankResult res;
      res.rank = r;
      try {
        GroupInfo info;
        info.backend = reg->name;
        info.rank = r;
        info.size = world;
        info.timeout = opts.group_timeout;
        info.store = std::make_shared<PrefixStore>("pg/0", store);
        BackendArgs args{info, &Env::process()};
        ctx.pg = reg->create(args);
        if (opts.stack) ctx.pg = build_stack(std::move(ctx.pg), args);
        {
          std::lock_guard<std::mutex> lk(mu);
          groups[r] = ctx.pg;
        }
        res = run_body(ctx, body);
        if (res.status != RankStatus::Died) exit_barrier(*ctx.pg, opts.group_timeout);
        ctx.pg->shutdown();
      } catch (const std::exception& e) {
        res.status = RankStatus::Failed;
        res.message = fmt::format("creating the group: {}", e.what());
      }
      ctx.pg.reset();
      std::lock_guard<std::mutex> lk(mu);
      results[r] = std::move(res);
      done[r] = true;
      cv.notify_all();
    });
  }
  std::vector<int> hung;
  {
    std::unique_lock<std::mutex> lk(mu);
    const auto all = [&] {
      return std::all_of(done.begin(), done.end(), [](bool b) { return b; });
    };
    if (!cv.wait_until(lk, Clock::now() + opts.deadline, all)) {
      for (int r = 0; r < world; ++r) {
        if (!done[r]) hung.push_back(r);
      }
      // Threads cannot be killed: shut every group down so blocked ops fail, then give the
      // threads a grace period before giving up on the process.
      for (auto& g : groups) {
        if (g) g->shutdown();
      }
      if (!cv.wait_for(lk, std::chrono::seconds(10), all)) {
        std::fprintf(stderr, "run_ranks: ranks %s hung and could not be stopped\n",
                     fmt::format("{}", fmt::join(hung, ", ")).c_str());
        std::abort();
      }
    }
  }
  for (auto& t : threads) t.join();
  for (const auto& [k, v] : saved) {
    if (v) {
      ::setenv(k.c_str(), v->c_str(), 1);
    } else {
      ::unsetenv(k.c_str());
    }
  }
  for (int r : hung) {
    results[r].status = RankStatus::Hung;
    results[r].message = fmt::format("did not finish within {} ms", opts.deadline.count());
  }
  out.ranks = std::move(results);
  return out;
}

}  // namespace

void RankContext::die() {
  try {
    if (pg) arrive_at_exit(*pg);
  } catch (const std::exception&) {
  }
  if (mode == Mode::Processes) {
    std::fflush(nullptr);
    ::_exit(3);
  }
  if (pg) pg->shutdown();
  throw RankDied{};
}

std::string_view rank_status_name(RankStatus s) {
  switch (s) {
    case RankStatus::Passed:
      return "passed";
    case RankStatus::Failed:
      return "FAILED";
    case RankStatus::Died:
      return "DIED";
    case RankStatus::Hung:
      return "HUNG";
  }
  return "?";
}

bool RunResult::ok() const {
  return std::all_of(ranks.begin(), ranks.end(),
                     [](const RankResult& r) { return r.status == RankStatus::Passed; });
}

std::string RunResult::summary() const {
  std::string out;
  std::vector<int> hung;
  for (const auto& r : ranks) {
    if (r.status == RankStatus::Hung) {
      hung.push_back(r.rank);
    } else if (r.status != RankStatus::Passed) {
      out += fmt::format("rank {} {}: {}\n", r.rank, rank_status_name(r.status), r.message);
    }
  }
  if (!hung.empty()) {
    out += fmt::format("rank{} {} HUNG ({})\n", hung.size() == 1 ? "" : "s", fmt::join(hung, ", "),
                       ranks[hung[0]].message);
  }
  return out.empty() ? "all ranks passed" : out;
}

RunResult run_ranks(int world, const std::function<void(RankContext&)>& body,
                    const RunOptions& opts) {
  if (!test_backends_registered()) throw std::runtime_error("run_ranks: test backends missing");
  const bool threads_only = in_process_only(opts.backend) || !opts.stack;
  Mode m = opts.mode;
  if (m == Mode::Auto) m = threads_only ? Mode::Threads : Mode::Processes;
  if (m == Mode::Processes && threads_only) {
    throw std::runtime_error(fmt::format("run_ranks: backend '{}'{} runs only with Mode::Threads",
                                         opts.backend,
                                         opts.stack ? "" : " without the wrapper stack"));
  }
  if (m == Mode::Processes) return run_processes(world, body, opts);
  return run_threads(world, body, opts);
}

}  // namespace collie::testing
