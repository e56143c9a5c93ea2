#pragma once
// Gloo's connect phase bounded by the group's timeout. libgloo's connectFullMesh waits on the
// store and on each pair in turn, each up to its own timeout (several times the group timeout in
// all); here it runs on a helper thread and the caller gives up at the deadline, naming the ranks
// that never reached the connect phase, the peer this rank was still connecting to, and the
// addresses the ranks published. On that timeout the helper thread is left to finish or fail on
// its own (it owns everything it touches) while the caller's error ends the process's use of the
// group. Each rank first publishes "gloo_connect/<rank>" = its bound address in the group store.
// Thread safety: call from one thread per group.
#include <gloo/rendezvous/context.h>

#include <memory>
#include <string>

#include "comm/process_group.h"

namespace collie {

// Throws TimeoutError at the deadline, NetworkError / the store's errors on failures.
std::shared_ptr<gloo::rendezvous::Context> connect_full_mesh_bounded(
    const GroupInfo& group, const std::shared_ptr<gloo::transport::Device>& device,
    const std::string& address, const std::string& reason);

}  // namespace collie
