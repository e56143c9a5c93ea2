#pragma once
// What a host can do, for the pairwise probe's capacity rule (probes/verdict.h): its loopback TCP
// bandwidth (a connection over 127.0.0.1 inside this process, the probe's message size) and the
// stated speed of the interface that carries the probe's data. Each measuring rank measures its
// host once per probe run. Thread safety: calls are independent; loopback_tcp_gbps starts one
// thread and joins it before it returns.
#include <cstdint>
#include <string>

#include "core/timeout.h"
#include "probes/verdict.h"

namespace collie {
class Env;
}  // namespace collie

namespace collie::probes {

// Median GB/s of `messages` messages of `bytes` over a TCP connection on 127.0.0.1, each timed
// from its send to the receiver's one-byte ack (as the probe times its links), after one warm-up
// message. Returns 0 and sets *error (REQUIRES: error != nullptr) when a socket call fails or
// the whole run outlives `deadline`. REQUIRES: bytes >= 1, messages >= 1.
double loopback_tcp_gbps(int64_t bytes, int messages, Millis deadline, std::string* error);

// The stated speed of `iface` from SYSFS/class/net/IFACE/speed (Mb/s), in GB/s; 0 when unknown:
// no interface, no file, "-1" or 0 (many virtual NICs), unreadable or not a number.
double interface_line_gbps(const std::string& iface, const std::string& sysfs = "/sys");

// The interface the backend's data goes through, or "" when collie cannot know it: for gloo the
// one discovery/bind_address.h chooses for a group whose store host is `store_host` (what the Gloo
// device binds); mpi and nccl pick their own transport.
std::string data_interface(const std::string& backend, const Env& env,
                           const std::string& store_host);

// Both of the above for this host; a failed loopback measurement leaves loopback_gbps 0
// (unknown) and is logged.
HostCapacity measure_host_capacity(const std::string& backend, const Env& env,
                                   const std::string& store_host, int64_t bytes, int messages,
                                   Millis deadline);

}  // namespace collie::probes
