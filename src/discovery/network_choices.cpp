#include "discovery/network_choices.h"

#include <mutex>

namespace collie {
namespace {

std::mutex g_mu;
std::vector<NetworkChoice>& choices() {
  static std::vector<NetworkChoice> v;
  return v;
}

std::string& host_of_rendezvous() {
  static std::string h;
  return h;
}

}  // namespace

void record_network_choice(const NetworkChoice& c) {
  std::lock_guard<std::mutex> lk(g_mu);
  for (auto& e : choices()) {
    if (e.what == c.what) {
      e = c;
      return;
    }
  }
  choices().push_back(c);
}

void set_rendezvous_host(const std::string& host) {
  std::lock_guard<std::mutex> lk(g_mu);
  host_of_rendezvous() = host;
}

std::string rendezvous_host() {
  std::lock_guard<std::mutex> lk(g_mu);
  return host_of_rendezvous();
}

std::vector<NetworkChoice> network_choices() {
  std::lock_guard<std::mutex> lk(g_mu);
  return choices();
}

}  // namespace collie
