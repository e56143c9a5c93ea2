#pragma once
// Gloo's TCP device: bound to the address discovery/bind_address.h chooses (COLLIE_GLOO_HOST >
// GLOO_SOCKET_IFNAME > this host's route to the rendezvous host > loopback for a single host),
// always a numeric address, so libgloo never resolves a host name itself (an unresolvable name
// crashes it in CreateDeviceAttr).
// Thread safety: choose_gloo_device is a pure function of `env` and the host's interfaces.
#include <gloo/transport/device.h>

#include <memory>
#include <string>

#include "discovery/bind_address.h"

namespace collie {

class Env;

using GlooDeviceChoice = BindChoice;

// Throws InvalidArgument when an override names no address of this host.
GlooDeviceChoice choose_gloo_device(const Env& env, const std::string& rendezvous_host);
// libgloo writes with writev(), which raises SIGPIPE when a peer has gone; at the default
// disposition that kills the process before Gloo can report the lost connection as an error.
// Like Python (which torch.distributed runs under), collie then ignores SIGPIPE: this sets it to
// SIG_IGN once per process when it is still SIG_DFL, and leaves an application's handler alone.
void ignore_sigpipe_unless_handled();

// Throws BackendError naming the choice and the settings to change when Gloo cannot bind.
// Calls ignore_sigpipe_unless_handled() first.
std::shared_ptr<gloo::transport::Device> create_gloo_device(const GlooDeviceChoice& choice,
                                                            int rank);

}  // namespace collie
