#include "comm/network_choices.h"

#include <mutex>

namespace collie {
namespace {

std::mutex g_mu;
std::vector<NetworkChoice>& choices() {
  static std::vector<NetworkChoice> v;
  return v;
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

std::vector<NetworkChoice> network_choices() {
  std::lock_guard<std::mutex> lk(g_mu);
  return choices();
}

}  // namespace collie
