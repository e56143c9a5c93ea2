#include "debug/crash_dump.h"

#include <cxxabi.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "debug/dump_service.h"

namespace collie {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

std::atomic<DumpService*> g_service{nullptr};
std::atomic<bool> g_dumped{false};
std::terminate_handler g_prev_terminate = nullptr;
struct sigaction g_prev_action[NSIG];

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "a fatal signal";
  }
}

void say(const std::string& line) {
  // write(2): no stdio lock, which the crashing thread may hold.
  const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  (void)n;
}

// "collie::DesyncError" for the exception being handled, "" when there is none.
std::string current_exception_type() {
  const std::type_info* t = abi::__cxa_current_exception_type();
  if (t == nullptr) return "";
  int status = 0;
  char* name = abi::__cxa_demangle(t->name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name != nullptr ? name : t->name();
  std::free(name);
  return out;
}

[[noreturn]] void on_terminate() {
  std::string what = "std::terminate called";
  std::string shown = what;
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = fmt::format("uncaught exception: {}", x.what());
    } catch (...) {
      what = "uncaught exception (not a std::exception)";
    }
    // The C++ runtime's handler, called next, prints the message itself: the line names the
    // exception's type only, so the message is not printed twice.
    shown = fmt::format("uncaught {}", current_exception_type());
  }
  // Messages from Gloo span lines; the dump's reason is one.
  for (char& c : what) c = c == '\n' ? ' ' : c;
  crash_dump(what, shown);
  if (g_prev_terminate != nullptr) g_prev_terminate();
  std::abort();
}

extern "C" void on_fatal_signal(int sig) {
  if (!g_dumped.load()) {
    // A dump that deadlocks must not keep a crashed process alive.
    ::signal(SIGALRM, SIG_DFL);
    ::alarm(5);
    crash_dump(fmt::format("fatal signal {}", signal_name(sig)));
    ::alarm(0);
  }
  // Whatever was there before (default: die by this signal, core dump included).
  ::sigaction(sig, &g_prev_action[sig], nullptr);
  ::raise(sig);
}

}  // namespace

std::string crash_dump(const std::string& reason, const std::string& shown) {
  DumpService* ds = g_service.load();
  if (ds == nullptr || g_dumped.exchange(true)) return "";
  const std::string path = ds->dump_on_crash(reason);
  if (!path.empty()) {
    say(fmt::format(
        "[Rank {}] collie: {}; flight recorder dumped to {} (run `collie analyze {}`)\n",
        ds->rank(), shown.empty() ? reason : shown, path, ds->dump_dir()));
  }
  return path;
}

void install_crash_dump(DumpService& service) {
  static std::once_flag once;
  std::call_once(once, [&] {
    g_service.store(&service);
    g_prev_terminate = std::set_terminate(on_terminate);
    for (int sig : kSignals) {
      struct sigaction sa {};
      sa.sa_handler = on_fatal_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;
      ::sigaction(sig, &sa, &g_prev_action[sig]);
    }
  });
}

}  // namespace collie
