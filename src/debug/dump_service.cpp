#include "debug/dump_service.h"

#include <csignal>
#include <utility>

#include "core/env.h"
#include "core/log.h"
#include "debug/crash_dump.h"
#include "debug/flight_recorder.h"
#include "store/store.h"

namespace collie {
namespace {

// The only thing the signal handler touches (async-signal-safe).
std::atomic<bool> g_sigusr1{false};

extern "C" void on_sigusr1(int) { g_sigusr1.store(true); }

constexpr auto kTick = std::chrono::milliseconds(50);
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
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
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
  if (thread_.joinable()) return;
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  thread_ = std::thread([this] { loop(); });
  if (!dir_.empty()) install_crash_dump(*this);
}

void DumpService::request_dump(const std::string& reason, bool all_ranks) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (pending_.empty()) pending_ = reason;
    pending_all_ = pending_all_ || all_ranks;
  }
  cv_.notify_all();
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

void DumpService::loop() {
  auto poll_every = kMinPoll;
  auto next_poll = std::chrono::steady_clock::now() + poll_every;
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    cv_.wait_for(lk, kTick, [&] { return stop_ || !pending_.empty() || g_sigusr1.load(); });
    std::string reason;
    reason.swap(pending_);
    const bool all = std::exchange(pending_all_, false);
    const bool signaled = g_sigusr1.exchange(false);
    const bool stopping = stop_;
    busy_ = !reason.empty() || signaled;
    lk.unlock();
    if (all) ask_all_ranks();
    if (!reason.empty()) automatic_dump(reason);
    if (signaled) dump_now("SIGUSR1");
    lk.lock();
    busy_ = false;
    lk.unlock();
    if (stopping) return;
    if (std::chrono::steady_clock::now() >= next_poll) {
      const int64_t before = seen_request_.load();
      poll_store();
      poll_every = seen_request_ != before ? kMinPoll : std::min(poll_every * 2, kMaxPoll);
      next_poll = std::chrono::steady_clock::now() + poll_every;
    }
    lk.lock();
  }
}

}  // namespace collie
