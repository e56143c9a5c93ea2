#pragma once
// Gloo's connect phase, in O(1) store requests per rank and bounded by the group's timeout.
// libgloo's connectFullMesh (Debian's 2022 libgloo) has every rank read every other rank's N-1
// pair addresses (136 N^3 bytes out of the store in all; its 1 GiB cap near N = 2,800) and the
// lower ranks' host names one request at a time. Here each rank makes two Store::gather requests:
// its IP and host name (read by all), and the N ports its pairs listen on as cells of a column
// gather (rank j reads only the port each rank opened for j), then connects libgloo's pairs as
// connectFullMesh would. The connect runs on a helper thread and the caller gives up at the
// deadline, naming the ranks that never reached the connect phase (the gathers' timeout replies),
// or the peer this rank was still connecting to and where it listens. On that timeout the helper
// thread is left to finish or fail on its own (it owns everything it touches) while the caller's
// error ends the process's use of the group. Before it starts it checks, in one line, that the
// mesh's descriptors fit the open-files limit.
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
