#pragma once
// Local-address facts used to pick what Gloo and the store bind to. Nothing here sends a packet:
// route_source() connects a UDP socket (which only asks the kernel's routing table).
// Thread safety: stateless, thread-safe. Failures are returned (nullopt / empty), never thrown,
// except where stated.
#include <optional>
#include <string>
#include <vector>

namespace collie::net {

// True for 127.0.0.0/8, ::1, ::ffff:127.x and the name "localhost".
bool is_loopback(const std::string& host_or_address);

// Numeric addresses `host` resolves to here (getaddrinfo, IPv4 first); empty when it does not
// resolve. A numeric `host` is returned as is.
std::vector<std::string> resolve(const std::string& host);

// The local address the kernel would use as the source of a connection to `host` (the first of
// its addresses that has a route). nullopt when `host` does not resolve or has no route; *why
// then says which.
std::optional<std::string> route_source(const std::string& host, std::string* why = nullptr);

struct InterfaceAddress {
  std::string iface;
  std::string address;  // numeric
  bool loopback = false;
};

// Up interfaces with an IPv4 or (non-link-local) IPv6 address, in getifaddrs order.
std::vector<InterfaceAddress> interface_addresses();

// The first address of interface `iface`; nullopt when it has none or does not exist.
std::optional<std::string> address_of_interface(const std::string& iface);

// The first non-loopback interface address (IPv4 preferred); nullopt when there is none.
std::optional<InterfaceAddress> first_non_loopback();

}  // namespace collie::net
