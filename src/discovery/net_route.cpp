#include "discovery/net_route.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "core/printable.h"

namespace collie::net {
namespace {

std::string numeric(const sockaddr* sa, socklen_t len) {
  char buf[NI_MAXHOST] = {};
  if (getnameinfo(sa, len, buf, sizeof(buf), nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return buf;
}

struct AddrInfo {
  addrinfo* head = nullptr;
  ~AddrInfo() {
    if (head) freeaddrinfo(head);
  }
};

int lookup(const std::string& host, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  return getaddrinfo(host.c_str(), "9", &hints, &out.head);
}

}  // namespace

bool is_loopback(const std::string& h) {
  return h == "localhost" || h.rfind("127.", 0) == 0 || h == "::1" ||
         h.rfind("::ffff:127.", 0) == 0;
}

std::vector<std::string> resolve(const std::string& host) {
  AddrInfo ai;
  std::vector<std::string> v4, v6;
  if (host.empty() || lookup(host, ai) != 0) return {};
  for (addrinfo* p = ai.head; p; p = p->ai_next) {
    std::string a = numeric(p->ai_addr, p->ai_addrlen);
    if (a.empty()) continue;
    auto& dst = p->ai_family == AF_INET ? v4 : v6;
    bool seen = false;
    for (const auto& x : dst) seen = seen || x == a;
    if (!seen) dst.push_back(a);
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

std::optional<std::string> route_source(const std::string& host, std::string* why) {
  AddrInfo ai;
  if (host.empty() || lookup(host, ai) != 0) {
    if (why) *why = quote(host) + " does not resolve on this host";
    return std::nullopt;
  }
  // IPv4 results first, as resolve() orders them.
  for (int pass = 0; pass < 2; ++pass) {
    for (addrinfo* p = ai.head; p; p = p->ai_next) {
      if ((pass == 0) != (p->ai_family == AF_INET)) continue;
      const int fd = socket(p->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      sockaddr_storage local{};
      socklen_t len = sizeof(local);
      const bool ok = connect(fd, p->ai_addr, p->ai_addrlen) == 0 &&
                      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
      close(fd);
      if (!ok) continue;
      std::string a = numeric(reinterpret_cast<sockaddr*>(&local), len);
      if (!a.empty()) return a;
    }
  }
  if (why) *why = "no route to " + quote(host) + " from this host";
  return std::nullopt;
}

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* head = nullptr;
  if (getifaddrs(&head) != 0) return out;
  for (int pass = 0; pass < 2; ++pass) {  // IPv4 first
    for (ifaddrs* p = head; p; p = p->ifa_next) {
      if (!p->ifa_addr || !(p->ifa_flags & IFF_UP)) continue;
      const int fam = p->ifa_addr->sa_family;
      if (fam != (pass == 0 ? AF_INET : AF_INET6)) continue;
      if (fam == AF_INET6 &&
          IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(p->ifa_addr)->sin6_addr)) {
        continue;  // needs a scope id; not something peers can dial by address alone
      }
      const socklen_t len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      std::string a = numeric(p->ifa_addr, len);
      if (a.empty()) continue;
      out.push_back({p->ifa_name, a, (p->ifa_flags & IFF_LOOPBACK) != 0 || is_loopback(a)});
    }
  }
  freeifaddrs(head);
  return out;
}

std::optional<std::string> address_of_interface(const std::string& iface) {
  for (const auto& a : interface_addresses()) {
    if (a.iface == iface) return a.address;
  }
  return std::nullopt;
}

std::optional<InterfaceAddress> first_non_loopback() {
  for (const auto& a : interface_addresses()) {
    if (!a.loopback) return a;
  }
  return std::nullopt;
}

}  // namespace collie::net
