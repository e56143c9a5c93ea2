#include "debug/dump_service.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <utility>

#include "core/atomic_max.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_name.h"
#include "debug/crash_dump.h"
#include "debug/flight_recorder.h"
#include "store/store.h"

namespace collie {
namespace {

// The only things the signal handler touches (async-signal-safe): a flag, and one byte written
// to the started service's wake pipe so its thread wakes at once.
std::atomic<bool> g_sigusr1{false};
std::atomic<int> g_sigusr1_wake_fd{-1};

extern "C" void on_sigusr1(int) {
  g_sigusr1.store(true);
  const int fd = g_sigusr1_wake_fd.load();
  if (fd < 0) return;
  const int saved = errno;
  [[maybe_unused]] const ssize_t n = write(fd, "s", 1);
  errno = saved;
}

void drain(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
}

// Without a wake pipe (pipe2 failed: out of descriptors) the thread falls back to this tick.
constexpr auto kTickWithoutPipe = std::chrono::milliseconds(50);

}  // namespace

// One run of the request watcher, shared by the service and its detached thread: the thread's
// own store client, and how the thread says it no longer touches the service.
struct DumpService::StoreWatch {
  std::shared_ptr<Store> client;
  pid_t owner = 0;  // the process whose thread this is
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // guarded by mu
};

DumpService::DumpService(FlightRecorder& fr, std::string dump_dir, FrDumpFormat format,
                         std::chrono::milliseconds store_rearm)
    : fr_(fr), dir_(std::move(dump_dir)), format_(std::move(format)), store_rearm_(store_rearm) {}

std::string dump_request_key(int64_t n) { return fmt::format("{}/{}", kDumpRequestKey, n); }

int64_t request_cluster_dump(Store& store, DumpTrigger trigger) {
  const int64_t n = store.add(kDumpRequestKey, 1);
  store.set(dump_request_key(n), dump_trigger_name(trigger));
  return n;
}

DumpService::~DumpService() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  stop_store_watch();
  if (thread_pid_ == ::getpid()) {
    thread_.stop();  // writes the wake pipe and joins
  } else {
    thread_.forget_forked_copy();  // a forked child's copy: the thread runs only in the parent
  }
  int fd = wake_write_.load();
  g_sigusr1_wake_fd.compare_exchange_strong(fd, -1);
  for (int f : {wake_read_.load(), wake_write_.load()}) {
    if (f >= 0) close(f);
  }
}

void DumpService::wake() {
  const int fd = wake_write_.load();
  if (fd >= 0) [[maybe_unused]]
    const ssize_t n = ::write(fd, "w", 1);
}

DumpService& DumpService::global() {
  static DumpService s(FlightRecorder::global(),
                       Env::process().get("COLLIE_FR_DUMP_DIR").value_or(""),
                       FrDumpFormat::from_env(Env::process()));
  return s;
}

void DumpService::start(int rank, std::shared_ptr<Store> world_store) {
  rank_.store(rank);
  if (world_store) {
    std::shared_ptr<Store> client;
    try {
      seen_request_ = world_store->add(kDumpRequestKey, 0);
      client = world_store->clone();
    } catch (const std::exception& e) {
      log(LogLevel::Warning,
          "flight recorder: cannot watch the store for other ranks' dump requests ({}); this "
          "rank dumps only on its own errors and SIGUSR1",
          e.what());
    }
    // A new world store replaces the one watched so far (ranks running as threads of one
    // process start the service concurrently: the last one's store is watched).
    for (;;) {
      stop_store_watch();
      std::lock_guard<std::mutex> lk(mu_);
      if (watch_) continue;  // another start() got in between
      store_ = world_store;
      if (client) {
        auto w = std::make_shared<StoreWatch>();
        w->client = client;
        w->owner = ::getpid();
        watch_ = w;
        // Detached, so a watcher that ended on its own (the store went away: rank 0 exited) is
        // not a thread left unjoined when the process ends without destructors (_exit; a
        // joinable version made TSan report 124 leaked collie-dump-req threads in the
        // conformance tests' ranks); stop_store_watch waits for `done` instead of joining.
        std::thread([this, w] {
          name_this_thread("collie-dump-req");
          watch_store(*w);
          {
            std::lock_guard<std::mutex> g(w->mu);
            w->done = true;
          }
          w->cv.notify_all();
        }).detach();
      }
      break;
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (thread_.running()) {
    if (thread_pid_ == ::getpid()) return;
    thread_.forget_forked_copy();  // a forked child: the parent's thread is not here; start ours
  }
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
    wake_read_ = fds[0];
    wake_write_ = fds[1];
    g_sigusr1_wake_fd.store(wake_write_);
  } else {
    log(LogLevel::Warning, "flight recorder: no wake pipe ({}); the dump thread polls every {} ms",
        std::strerror(errno), kTickWithoutPipe.count());
  }
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  thread_pid_ = ::getpid();
  thread_.start(
      "collie-dump", [this] { loop(); }, [this] { wake(); });
  if (!dir_.empty()) install_crash_dump(*this);
}

void DumpService::request_dump(const std::string& reason, bool all_ranks,
                               const std::string& detail) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (pending_.empty()) {
      pending_ = reason;
      pending_detail_ = detail;
    }
    pending_all_ = pending_all_ || all_ranks;
  }
  wake();
}

void DumpService::request_fresh_dump(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (pending_request_.empty()) pending_request_ = reason;
  }
  wake();
}

void DumpService::ask_all_ranks() {
  std::shared_ptr<Store> s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s = store_;
  }
  if (!s) return;
  try {
    // A job-wide failure: every rank fails at about the same time (timeouts cascade), and one
    // request asks them all. The first failure claims kDumpFailureKey; every later one sees
    // it taken and asks nothing more, so each rank makes one store request and every watcher
    // wakes once (N ranks each bumping the counter woke N watchers N times).
    const Bytes mine = to_bytes(fmt::format("rank {}", rank_.load()));
    if (s->compare_set(kDumpFailureKey, Bytes{}, mine) != mine) return;
    // The watcher of this process must not take its own request for another rank's: the counter
    // it will read is seen before the key that wakes it is set.
    const int64_t n = s->add(kDumpRequestKey, 1);
    raise_max(seen_request_, n);
    s->set(dump_request_key(n), dump_trigger_name(DumpTrigger::Failure));
  } catch (const std::exception& e) {
    log(LogLevel::Warning, "flight recorder: could not ask the other ranks to dump: {}", e.what());
  }
}

void DumpService::flush(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!thread_.running()) return;  // not started: nothing will write it
      if (pending_.empty() && pending_request_.empty() && !busy_ && !g_sigusr1.load()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string DumpService::write(const std::string& reason, DumpTrigger trigger,
                               const std::string& detail) {
  if (dir_.empty()) {
    log(LogLevel::Warning,
        "flight recorder: not dumped ({}); set COLLIE_FR_DUMP_DIR to keep the last {} ops", reason,
        fr_.capacity());
    return "";
  }
  std::lock_guard<std::mutex> lk(dump_mu_);
  try {
    std::string path = write_locked(detail.empty() ? reason : reason + ": " + detail, trigger);
    log(LogLevel::Warning, "flight recorder dumped to {} ({}); run `collie analyze {}`", path,
        reason, dir_);
    return path;
  } catch (const std::exception& e) {
    log(LogLevel::Error, "{}", e.what());
    return "";
  }
}

// The first failure's dump also goes to first-failure/, which later dumps never overwrite.
// REQUIRES: dump_mu_ held, dir_ set.
std::string DumpService::write_locked(const std::string& reason, DumpTrigger trigger) {
  std::vector<std::string> dirs = {dir_};
  if (trigger == DumpTrigger::Failure && !failure_kept_.exchange(true))
    dirs.push_back(first_failure_dir());
  std::string path =
      fr_.dump_to_dir(dirs, rank_.load() < 0 ? 0 : rank_.load(), reason, format_, trigger);
  dumps_.fetch_add(1);
  return path;
}

std::string DumpService::first_failure_dir() const { return dir_ + "/first-failure"; }

std::string DumpService::dump_now(const std::string& reason) {
  return write(reason, DumpTrigger::Request);
}

std::string DumpService::dump_on_crash(const std::string& reason) {
  if (dir_.empty()) return "";
  std::unique_lock<std::mutex> lk(dump_mu_, std::defer_lock);
  for (int i = 0; i < 100 && !lk.try_lock(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  try {
    return write_locked(reason, DumpTrigger::Failure);
  } catch (const std::exception&) {
    return "";
  }
}

void DumpService::automatic_dump(const std::string& reason, const std::string& detail) {
  if (failure_kept_.load()) {
    // A failure cascades into more errors; their dumps would bury the first one's evidence in
    // the main folder. Requests (SIGUSR1, POST /v1/dump) still write fresh dumps.
    log(LogLevel::Info, "flight recorder: not dumped again ({}); the first failure's dump is in {}",
        reason, first_failure_dir());
    return;
  }
  write(reason, DumpTrigger::Failure, detail);
}

void DumpService::stop_store_watch() {
  std::shared_ptr<StoreWatch> w;
  {
    std::lock_guard<std::mutex> lk(mu_);
    w = std::move(watch_);
  }
  // In a forked child the thread exists only in the parent and the client's socket is shared
  // with it (interrupting it would cut the parent's wait): leave both alone.
  if (!w || w->owner != ::getpid()) return;
  w->stop.store(true);
  w->client->interrupt();
  std::unique_lock<std::mutex> lk(w->mu);
  w->cv.wait(lk, [&] { return w->done; });
}

// Parked in the store until the next request's key appears (or store_rearm_ passes: then the
// counter is read anyway, for a bump without its key). Ends on stop_store_watch (interrupt) or
// when the store is gone (rank 0 exited: no one is left to ask).
void DumpService::watch_store(StoreWatch& w) {
  Store* client = w.client.get();
  while (!w.stop.load()) {
    const auto parked = std::chrono::steady_clock::now();
    try {
      client->wait({dump_request_key(seen_request_.load() + 1)}, store_rearm_);
    } catch (const StoreError&) {
      // The re-arm deadline; the interrupt, or an error that would come back at once, ends it.
      if (w.stop.load() || std::chrono::steady_clock::now() - parked < store_rearm_) return;
    } catch (const std::exception&) {
      return;
    }
    int64_t v = 0;
    try {
      v = client->add(kDumpRequestKey, 0);
    } catch (const std::exception&) {
      return;
    }
    if (const int64_t was = raise_max(seen_request_, v); was < v) {
      // The requests' keys say whether another rank failed or someone asked for a dump; one
      // failure among the requests since the last one seen makes it a failure. Each asker bumps
      // the counter before it sets its key, so when two ranks fail at once the newest key may
      // not be there yet (reading only that one took their failure for a tool's request, a
      // fresh dump that a later failure of this rank then overwrote); the key that woke this
      // watcher is.
      bool failure = false;
      for (int64_t n = was + 1; n <= v && !failure; ++n) {
        try {
          const std::string key = dump_request_key(n);
          // A bump without its key (a tool asking) is not a failure.
          failure = client->check({key}) &&
                    client->get_string(key) == dump_trigger_name(DumpTrigger::Failure);
        } catch (const std::exception&) {
        }
      }
      if (failure) {
        request_dump("another rank failed (dump_request in the store)");
      } else {
        request_fresh_dump("dump_request set in the store (POST /v1/dump or a tool)");
      }
    }
  }
}

// Event-driven: the thread sleeps in poll() on its wake pipe (request_dump, the store watcher,
// SIGUSR1, stop) and never wakes on its own.
void DumpService::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    std::string reason, detail, requested;
    reason.swap(pending_);
    detail.swap(pending_detail_);
    requested.swap(pending_request_);
    const bool all = std::exchange(pending_all_, false);
    const bool signaled = g_sigusr1.exchange(false);
    const bool stopping = stop_;
    busy_ = !reason.empty() || !requested.empty() || signaled;
    lk.unlock();
    if (all) ask_all_ranks();
    if (!reason.empty()) automatic_dump(reason, detail);
    // A SIGUSR1 and a store request arriving together are one moment: one fresh dump.
    if (signaled) {
      dump_now("SIGUSR1");
    } else if (!requested.empty()) {
      dump_now(requested);
    }
    lk.lock();
    busy_ = false;
    lk.unlock();
    if (stopping) return;
    const int wake_fd = wake_read_.load();
    // Sleep until woken; only without a pipe on the fallback tick.
    const int timeout_ms = wake_fd < 0 ? static_cast<int>(kTickWithoutPipe.count()) : -1;
    pollfd pfd{wake_fd, POLLIN, 0};
    poll(&pfd, wake_fd < 0 ? 0 : 1, timeout_ms);
    if (wake_fd >= 0) drain(wake_fd);
    lk.lock();
  }
}

}  // namespace collie
