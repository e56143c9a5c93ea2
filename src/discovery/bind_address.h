#pragma once
// Which local address a rank binds (Gloo's TCP device; rank 0's store server), chosen so that
// the other hosts can dial it with nothing set. Precedence for Gloo:
//   COLLIE_GLOO_HOST (a host name or address of this host)
//   > GLOO_SOCKET_IFNAME (comma list as torch reads it: every name must exist; collie's one Gloo
//     device per group binds the first)
//   > the source address of this host's route to the rendezvous host (never loopback when that
//     host is remote; when the rendezvous host is this host and its name maps to loopback, as a
//     stock Debian/Ubuntu /etc/hosts maps it to 127.0.1.1, the first non-loopback interface)
//   > 127.0.0.1 when the rendezvous host is loopback or unknown (single host).
// The result is always a numeric address, so libgloo never resolves a name itself.
// Thread safety: pure functions of `env` and the host's interfaces/routes.
#include <string>

namespace collie {

class Env;

struct BindChoice {
  std::string address;  // numeric address to bind
  std::string iface;    // interface of `address` when known
  std::string reason;   // one phrase: which setting or route decided
};

// Throws InvalidArgument (one line, naming the variable) when COLLIE_GLOO_HOST does not resolve
// or GLOO_SOCKET_IFNAME names an interface without an address here.
BindChoice choose_gloo_bind(const Env& env, const std::string& rendezvous_host);

// What rank 0's store server listens on for clients that dial `host`: `host` itself when it is
// loopback, this host's address of the route to `host` when that is not loopback, else every
// interface ("0.0.0.0": `host` names this host but maps to loopback here, or does not resolve).
BindChoice choose_store_bind(const std::string& host);

}  // namespace collie
