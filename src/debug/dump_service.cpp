#include "debug/dump_service.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include "core/env.h"
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
constexpr auto kMinPoll = std::chrono::milliseconds(100);
constexpr auto kMaxPoll = std::chrono::milliseconds(2000);

}  // namespace

DumpService::DumpService(FlightRecorder& fr, std::string dump_dir, FrDumpFormat format)
    : fr_(fr), dir_(std::move(dump_dir)), format_(std::move(format)) {}

DumpService::~DumpService() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  int fd = wake_write_.load();
  g_sigusr1_wake_fd.compare_exchange_strong(fd, -1);
  for (int f : {wake_read_.load(), wake_write_.load()}) {
    if (f >= 0) close(f);
  }
}

void DumpService::wake() {
  const int fd = wake_write_.load();
  if (fd >= 0) [[maybe_unused]]
    const ssize_t n = write(fd, "w", 1);
}

DumpService& DumpService::global() {
  static DumpService s(FlightRecorder::global(),
                       Env::process().get("COLLIE_FR_DUMP_DIR").value_or(""),
                       FrDumpFormat::from_env(Env::process()));
  return s;
}

void DumpService::start(int rank, std::shared_ptr<Store> world_store) {
  rank_.store(rank);
  std::lock_guard<std::mutex> lk(mu_);
  if (world_store) {
    store_ = std::move(world_store);
    try {
      seen_request_ = store_->add(kDumpRequestKey, 0);
    } catch (const std::exception&) {
      seen_request_ = 0;
    }
  }
  if (thread_.joinable()) {
    wake();  // it may sleep without a store to poll
    return;
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
  thread_ = std::thread([this] {
    name_this_thread("collie-dump");
    loop();
  });
  if (!dir_.empty()) install_crash_dump(*this);
}

void DumpService::request_dump(const std::string& reason, bool all_ranks) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (pending_.empty()) pending_ = reason;
    pending_all_ = pending_all_ || all_ranks;
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
    seen_request_ = s->add(kDumpRequestKey, 1);
  } catch (const std::exception& e) {
    log(LogLevel::Warning, "flight recorder: could not ask the other ranks to dump: {}", e.what());
  }
}

void DumpService::flush(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!thread_.joinable()) return;  // not started: nothing will write it
      if (pending_.empty() && !busy_ && !g_sigusr1.load()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string DumpService::dump_now(const std::string& reason) {
  if (dir_.empty()) {
    log(LogLevel::Warning,
        "flight recorder: not dumped ({}); set COLLIE_FR_DUMP_DIR to keep the last {} ops", reason,
        fr_.capacity());
    return "";
  }
  std::lock_guard<std::mutex> lk(dump_mu_);
  try {
    std::string path = fr_.dump_to_dir(dir_, rank_.load() < 0 ? 0 : rank_.load(), reason, format_);
    dumps_.fetch_add(1);
    log(LogLevel::Warning, "flight recorder dumped to {} ({}); run `collie analyze {}`", path,
        reason, dir_);
    return path;
  } catch (const std::exception& e) {
    log(LogLevel::Error, "{}", e.what());
    return "";
  }
}

std::string DumpService::dump_on_crash(const std::string& reason) {
  if (dir_.empty()) return "";
  std::unique_lock<std::mutex> lk(dump_mu_, std::defer_lock);
  for (int i = 0; i < 100 && !lk.try_lock(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  try {
    std::string path = fr_.dump_to_dir(dir_, rank_.load() < 0 ? 0 : rank_.load(), reason, format_);
    dumps_.fetch_add(1);
    return path;
  } catch (const std::exception&) {
    return "";
  }
}

void DumpService::automatic_dump(const std::string& reason) {
  if (dumps_.load() > 0) {
    log(LogLevel::Info, "flight recorder: not dumped again ({}); the first dump is kept", reason);
    return;
  }
  dump_now(reason);
}

void DumpService::poll_store() {
  std::shared_ptr<Store> s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s = store_;
  }
  if (!s) return;
  int64_t v = 0;
  try {
    v = s->add(kDumpRequestKey, 0);
  } catch (const std::exception&) {
    return;  // store gone (rank 0 exited); nothing to watch
  }
  bool fire = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (v > seen_request_) {
      seen_request_ = v;
      fire = true;
    }
  }
  if (fire) automatic_dump("dump_request set in the store by another rank");
}

// Event-driven: the thread sleeps in poll() on its wake pipe (request_dump, SIGUSR1, stop) and
// wakes on its own only to poll the store's dump_request, and only when there is a store.
void DumpService::loop() {
  auto poll_every = kMinPoll;
  auto next_poll = std::chrono::steady_clock::now() + poll_every;
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    std::string reason;
    reason.swap(pending_);
    const bool all = std::exchange(pending_all_, false);
    const bool signaled = g_sigusr1.exchange(false);
    const bool stopping = stop_;
    const bool has_store = store_ != nullptr;
    busy_ = !reason.empty() || signaled;
    lk.unlock();
    if (all) ask_all_ranks();
    if (!reason.empty()) automatic_dump(reason);
    if (signaled) dump_now("SIGUSR1");
    lk.lock();
    busy_ = false;
    lk.unlock();
    if (stopping) return;
    if (has_store && std::chrono::steady_clock::now() >= next_poll) {
      const int64_t before = seen_request_.load();
      poll_store();
      poll_every = seen_request_ != before ? kMinPoll : std::min(poll_every * 2, kMaxPoll);
      next_poll = std::chrono::steady_clock::now() + poll_every;
    }
    int timeout_ms = -1;  // nothing to poll: sleep until woken
    if (has_store) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          next_poll - std::chrono::steady_clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    const int wake_fd = wake_read_.load();
    if (wake_fd < 0) {
      const int tick = static_cast<int>(kTickWithoutPipe.count());
      timeout_ms = timeout_ms < 0 ? tick : std::min(timeout_ms, tick);
    }
    pollfd pfd{wake_fd, POLLIN, 0};
    poll(&pfd, wake_fd < 0 ? 0 : 1, timeout_ms);
    if (wake_fd >= 0) drain(wake_fd);
    lk.lock();
  }
}

}  // namespace collie
