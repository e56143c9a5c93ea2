#include "backends/gloo/gloo_device.h"

#include <fmt/format.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include "core/env.h"
#include "core/error.h"

namespace collie {
namespace {

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

}  // namespace

GlooDeviceChoice choose_gloo_device(const Env& env) {
  GlooDeviceChoice c;
  if (auto h = env.get("COLLIE_GLOO_HOST"); h && !h->empty()) {
    c.hostname = *h;
    c.reason = "COLLIE_GLOO_HOST";
  } else if (auto i = env.get("GLOO_SOCKET_IFNAME"); i && !i->empty()) {
    // Like torch, only the first of a comma-separated list is used by a single device.
    c.iface = i->substr(0, i->find(','));
    c.reason = "GLOO_SOCKET_IFNAME";
  } else if (auto m = env.get("MASTER_ADDR"); !m || m->empty() || is_loopback(*m)) {
    c.hostname = "127.0.0.1";
    c.reason = m && !m->empty() ? "MASTER_ADDR is loopback" : "MASTER_ADDR unset (single host)";
  } else {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    c.hostname = name;
    c.reason = "hostname";
  }
  return c;
}

std::shared_ptr<gloo::transport::Device> create_gloo_device(const GlooDeviceChoice& choice,
                                                            int rank) {
  gloo::transport::tcp::attr attr;
  attr.hostname = choice.hostname;
  attr.iface = choice.iface;
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw BackendError(fmt::format(
        "[Rank {}] gloo: cannot create a TCP device on {} '{}' (chosen by {}): {}; set "
        "GLOO_SOCKET_IFNAME to a working interface or COLLIE_GLOO_HOST to this host's address",
        rank, choice.iface.empty() ? "host" : "interface",
        choice.iface.empty() ? choice.hostname : choice.iface, choice.reason, e.what()));
  }
}

}  // namespace collie
