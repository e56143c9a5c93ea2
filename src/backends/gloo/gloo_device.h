#pragma once
// Choosing the network interface for Gloo's TCP transport. Precedence:
//   COLLIE_GLOO_HOST (hostname or address to bind) > GLOO_SOCKET_IFNAME (interface name) >
//   127.0.0.1 when MASTER_ADDR is unset or loopback > the address this host's name resolves to.
// Thread safety: pure functions of `env`.
#include <gloo/transport/device.h>

#include <memory>
#include <string>

namespace collie {

class Env;

struct GlooDeviceChoice {
  std::string hostname;  // non-empty: bind to this host/address
  std::string iface;     // non-empty: bind to this interface
  std::string reason;    // which setting decided, for logs and errors
};

GlooDeviceChoice choose_gloo_device(const Env& env);
// Throws BackendError naming the choice and the settings to change when Gloo cannot bind.
std::shared_ptr<gloo::transport::Device> create_gloo_device(const GlooDeviceChoice& choice,
                                                            int rank);

}  // namespace collie
