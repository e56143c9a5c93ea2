#include "backends/gloo/gloo_device.h"

#include <fmt/format.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <csignal>
#include <mutex>

#include "core/error.h"

namespace collie {

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
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw BackendError(fmt::format(
        "[Rank {}] gloo: cannot create a TCP device on {} (chosen by {}): {}; set "
        "GLOO_SOCKET_IFNAME to a working interface or COLLIE_GLOO_HOST to this host's address",
        rank, choice.address, choice.reason, e.what()));
  }
}

}  // namespace collie
