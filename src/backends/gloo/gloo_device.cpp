#include "backends/gloo/gloo_device.h"

#include <fmt/format.h>
#include <gloo/transport/tcp/device.h>

#include "core/error.h"

namespace collie {

GlooDeviceChoice choose_gloo_device(const Env& env, const std::string& rendezvous_host) {
  return choose_gloo_bind(env, rendezvous_host);
}

std::shared_ptr<gloo::transport::Device> create_gloo_device(const GlooDeviceChoice& choice,
                                                            int rank) {
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
