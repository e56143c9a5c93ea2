#pragma once
// A process-wide record of the network choices made at startup (rendezvous source, store
// address, what Gloo bound and why), for logs and the debug server's /v1/config.
// Thread safety: all functions are thread-safe.
#include <string>
#include <vector>

namespace collie {

struct NetworkChoice {
  std::string what;    // "rendezvous", "store_bind", "gloo"
  std::string value;   // "10.0.0.1", "slurm step 12.0 -> node1:23456", ...
  std::string reason;  // why this value
};

// Records `c`, replacing an earlier entry with the same `what`.
void record_network_choice(const NetworkChoice& c);
std::vector<NetworkChoice> network_choices();

// The host this process's world rendezvous dialled ("" before any): groups built later on an
// explicit store (the probes' pair groups) bind toward it too.
void set_rendezvous_host(const std::string& host);
std::string rendezvous_host();

}  // namespace collie
