#include "debug/op_observer.h"

#include <mutex>

namespace collie {
namespace {
std::mutex g_mu;
std::vector<std::shared_ptr<OpObserver>>& list() {
  static std::vector<std::shared_ptr<OpObserver>> l;
  return l;
}
}  // namespace

void add_op_observer(std::shared_ptr<OpObserver> o) {
  std::lock_guard<std::mutex> lk(g_mu);
  list().push_back(std::move(o));
}

std::vector<std::shared_ptr<OpObserver>> op_observers() {
  std::lock_guard<std::mutex> lk(g_mu);
  return list();
}

}  // namespace collie
