#include "discovery/bind_address.h"

#include <fmt/format.h>

#include <optional>

#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"
#include "discovery/net_route.h"

namespace collie {
namespace {

std::string iface_of(const std::string& address) {
  for (const auto& a : net::interface_addresses()) {
    if (a.address == address) return a.iface;
  }
  return "";
}

// What `host` resolves to here, for messages ("127.0.1.1" rather than the route's source).
std::string resolved(const std::string& host, const std::string& fallback) {
  const auto r = net::resolve(host);
  return r.empty() ? fallback : r.front();
}

BindChoice loopback(std::string reason) { return BindChoice{"127.0.0.1", "lo", std::move(reason)}; }

}  // namespace

BindChoice choose_gloo_bind(const Env& env, const std::string& rendezvous_host) {
  if (auto h = env.get("COLLIE_GLOO_HOST"); h && !h->empty()) {
    const auto addrs = net::resolve(*h);
    if (addrs.empty()) {
      throw InvalidArgument(fmt::format(
          "COLLIE_GLOO_HOST {} does not resolve on this host; set it to one of this host's "
          "addresses, or unset it",
          quote(*h)));
    }
    return BindChoice{
        addrs.front(), iface_of(addrs.front()),
        *h == addrs.front() ? "COLLIE_GLOO_HOST" : fmt::format("COLLIE_GLOO_HOST ({})", *h)};
  }
  if (auto list = env.get("GLOO_SOCKET_IFNAME"); list && !list->empty()) {
    // Every listed interface must exist, as torch requires; one Gloo device uses the first.
    std::optional<std::string> first_addr;
    std::string first;
    size_t pos = 0;
    while (pos <= list->size()) {
      size_t comma = list->find(',', pos);
      if (comma == std::string::npos) comma = list->size();
      const std::string name = list->substr(pos, comma - pos);
      auto a = name.empty() ? std::nullopt : net::address_of_interface(name);
      if (!a) {
        throw InvalidArgument(fmt::format(
            "GLOO_SOCKET_IFNAME {}: interface {} does not exist or has no address on this "
            "host (see `ip addr`)",
            quote(*list), quote(name)));
      }
      if (!first_addr) {
        first_addr = a;
        first = name;
      }
      pos = comma + 1;
    }
    return BindChoice{*first_addr, first, fmt::format("GLOO_SOCKET_IFNAME={}", *list)};
  }
  std::string host = rendezvous_host;
  std::string via = "rendezvous host";
  if (host.empty()) {
    host = env.get("MASTER_ADDR").value_or("");
    via = "MASTER_ADDR";
  }
  if (host.empty()) return loopback("no rendezvous host (single host)");
  if (net::is_loopback(host)) {
    return loopback(fmt::format("{} {} is loopback (single host)", via, host));
  }
  std::string why;
  auto src = net::route_source(host, &why);
  if (src && !net::is_loopback(*src)) {
    const std::string ifc = iface_of(*src);
    return BindChoice{
        *src, ifc,
        fmt::format("route to {} {} leaves through {}", via, host, ifc.empty() ? *src : ifc)};
  }
  // The rendezvous host is this host under a name that maps to loopback here, or a name this
  // host cannot resolve: bind the first real interface, never loopback.
  const std::string cause =
      src ? fmt::format("{} {} resolves to {} here (this host)", via, host, resolved(host, *src))
          : why;
  if (auto nl = net::first_non_loopback()) {
    return BindChoice{nl->address, nl->iface,
                      fmt::format("{}; using {}'s address", cause, nl->iface)};
  }
  return loopback(cause + "; this host has no other interface");
}

BindChoice choose_store_bind(const std::string& host) {
  if (net::is_loopback(host)) return BindChoice{host, "lo", "store host is loopback"};
  std::string why;
  auto src = net::route_source(host, &why);
  if (src && !net::is_loopback(*src)) {
    return BindChoice{*src, iface_of(*src), fmt::format("this host's address toward {}", host)};
  }
  return BindChoice{"0.0.0.0", "",
                    src ? fmt::format("{} maps to {} here; listening on every interface", host,
                                      resolved(host, *src))
                        : why + "; listening on every interface"};
}

}  // namespace collie
