#pragma once
// Gloo's TCP device: bound to the address comm/bind_address.h chooses (COLLIE_GLOO_HOST >
// GLOO_SOCKET_IFNAME > this host's route to the rendezvous host > loopback for a single host),
// always a numeric address, so libgloo never resolves a host name itself (an unresolvable name
// crashes it in CreateDeviceAttr).
// Thread safety: choose_gloo_device is a pure function of `env` and the host's interfaces.
#include <gloo/transport/device.h>

#include <memory>
#include <string>

#include "comm/bind_address.h"

namespace collie {

class Env;

using GlooDeviceChoice = BindChoice;

// Throws InvalidArgument when an override names no address of this host.
GlooDeviceChoice choose_gloo_device(const Env& env, const std::string& rendezvous_host);
// Throws BackendError naming the choice and the settings to change when Gloo cannot bind.
std::shared_ptr<gloo::transport::Device> create_gloo_device(const GlooDeviceChoice& choice,
                                                            int rank);

}  // namespace collie
