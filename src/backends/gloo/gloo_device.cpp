#include "backends/gloo/gloo_device.h"

#include <fmt/format.h>
#include <gloo/transport/tcp/device.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <csignal>
#include <mutex>

#include "core/error.h"
#include "core/thread_name.h"

namespace collie {
namespace {

// libgloo's TCP device starts its I/O thread (tcp::Loop) in its constructor, and a new thread
// inherits its creator's name and scheduling policy. While it lives, this guard gives the calling
// thread the I/O thread's name ("collie-gloo-io", so /v1/stacks and `top -H` tell it apart) and
// SCHED_BATCH, and puts both back when the device exists.
//
// Why SCHED_BATCH: libgloo's Pair::handleEvents only try_locks the pair; while the op thread
// holds that lock (sending), the I/O thread returns to a level-triggered epoll_wait that reports
// the same socket again, and spins. When both threads share one CPU (ranks bound to a core, as
// mpirun and `collie perf` bind them), a normal-priority I/O thread woken by the peer's data
// preempts the op thread inside that lock and spins until the scheduler tick: a 8 B all_reduce
// with DETAIL checks (whose record exchange lines the ranks up so the peer's data lands exactly
// then) took 3.8 ms instead of 70 us at p50. A batch thread does not preempt on wakeup, so the op
// thread leaves the lock first; when the op thread waits, the CPU is idle and the I/O thread runs
// at once. scripts/bench/overhead.sh measures it (PIN=1, DEBUG=DETAIL).
class IoThreadSettings {
 public:
  IoThreadSettings() {
    pthread_getname_np(pthread_self(), name_, sizeof(name_));
    have_policy_ = pthread_getschedparam(pthread_self(), &policy_, &param_) == 0;
    name_this_thread("collie-gloo-io");
    if (have_policy_ && policy_ == SCHED_OTHER) {
      sched_param batch{};
      batch.sched_priority = 0;
      pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
    }
  }
  ~IoThreadSettings() {
    name_this_thread(name_);
    if (have_policy_) pthread_setschedparam(pthread_self(), policy_, &param_);
  }
  IoThreadSettings(const IoThreadSettings&) = delete;
  IoThreadSettings& operator=(const IoThreadSettings&) = delete;

 private:
  char name_[16] = {};
  bool have_policy_ = false;
  int policy_ = SCHED_OTHER;
  sched_param param_{};
};

}  // namespace

GlooDeviceChoice choose_gloo_device(const Env& env, const std::string& rendezvous_host) {
  return choose_gloo_bind(env, rendezvous_host);
}

void ignore_sigpipe_unless_handled() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == SIG_DFL) {
      std::signal(SIGPIPE, SIG_IGN);
    }
  });
}

std::shared_ptr<gloo::transport::Device> create_gloo_device(const GlooDeviceChoice& choice,
                                                            int rank) {
  ignore_sigpipe_unless_handled();
  gloo::transport::tcp::attr attr;
  attr.hostname = choice.address;  // numeric: libgloo's own lookup cannot fail on a name
  try {
    const IoThreadSettings io_thread;  // what libgloo's I/O thread inherits (above)
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw BackendError(fmt::format(
        "[Rank {}] gloo: cannot create a TCP device on {} (chosen by {}): {}; set "
        "GLOO_SOCKET_IFNAME to a working interface or COLLIE_GLOO_HOST to this host's address",
        rank, choice.address, choice.reason, e.what()));
  }
}

}  // namespace collie
