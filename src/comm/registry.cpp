#include "comm/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <mutex>

namespace collie {
namespace {

struct Registry {
  std::mutex mu;
  // A deque: registering more never moves the registrations find_backend handed out.
  std::deque<BackendRegistration> backends;
  std::vector<MissingBackend> missing;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool register_backend(BackendRegistration reg) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (const auto& b : r.backends) {
    if (b.name == reg.name) return false;  // find_backend answers with the first one
  }
  r.backends.push_back(std::move(reg));
  return true;
}

bool register_missing_backend(MissingBackend m) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  r.missing.push_back(std::move(m));
  return true;
}

const BackendRegistration* find_backend(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (const auto& b : r.backends) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::vector<const BackendRegistration*> backends() {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  std::vector<const BackendRegistration*> out;
  for (const auto& b : r.backends) out.push_back(&b);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

std::vector<MissingBackend> missing_backends() {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  return r.missing;
}

std::string backend_unavailable_reason(const std::string& name) {
  if (const BackendRegistration* b = find_backend(name)) {
    return b->unavailable_reason ? b->unavailable_reason() : std::string();
  }
  for (const auto& m : missing_backends()) {
    if (m.name == name)
      return fmt::format("backend '{}' is not available in this build: {}", name, m.reason);
  }
  return {};
}

}  // namespace collie
