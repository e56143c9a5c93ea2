#include "support/test_backends.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

#include "comm/registry.h"
#include "core/error.h"
#include "support/fake_backend.h"
#include "support/thread_group.h"

namespace collie::testing {
namespace {

constexpr const char* kWorldKey = "thread_world";

// The worlds of the groups alive in this process, by id. Rank 0 of a group creates its world and
// publishes the id in the group's store; the other ranks look it up here.
struct Worlds {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<ThreadWorld>> by_id;
  uint64_t next = 0;
};

Worlds& worlds() {
  static Worlds w;
  return w;
}

std::shared_ptr<ThreadWorld> join_thread_world(const GroupInfo& info) {
  Worlds& ws = worlds();
  if (info.rank == 0) {
    auto w = std::make_shared<ThreadWorld>(info.size);
    std::string id;
    {
      std::lock_guard<std::mutex> lk(ws.mu);
      for (auto it = ws.by_id.begin(); it != ws.by_id.end();) {
        it = it->second.expired() ? ws.by_id.erase(it) : std::next(it);
      }
      id = fmt::format("{}", ws.next++);
      ws.by_id[id] = w;
    }
    info.store->set(kWorldKey, id);
    return w;
  }
  info.store->wait({kWorldKey}, info.timeout);
  const std::string id = info.store->get_string(kWorldKey);
  std::lock_guard<std::mutex> lk(ws.mu);
  auto it = ws.by_id.find(id);
  std::shared_ptr<ThreadWorld> w = it == ws.by_id.end() ? nullptr : it->second.lock();
  if (!w) {
    throw InvalidArgument(fmt::format(
        "[Rank {}] backend 'threads': thread world {} is not in this process; the ranks of a "
        "threads group must be threads of one process (run_ranks with Mode::Threads)",
        info.rank, id));
  }
  if (w->size() != info.size) {
    throw InvalidArgument(
        fmt::format("[Rank {}] backend 'threads': group size {} but world size {}", info.rank,
                    info.size, w->size()));
  }
  return w;
}

BackendRegistration threads_registration() {
  BackendRegistration reg;
  reg.name = "threads";
  reg.create = [](const BackendArgs& args) -> std::shared_ptr<ProcessGroup> {
    return std::make_shared<ThreadGroup>(args.info, join_thread_world(args.info));
  };
  reg.capabilities = thread_caps();
  return reg;
}

BackendRegistration fake_registration() {
  BackendRegistration reg;
  reg.name = "fake";
  reg.create = [](const BackendArgs& args) -> std::shared_ptr<ProcessGroup> {
    return std::make_shared<FakeBackend>(args.info);
  };
  reg.capabilities = all_capabilities();
  return reg;
}

const bool kThreadsRegistered = register_backend(threads_registration());
const bool kFakeRegistered = register_backend(fake_registration());

}  // namespace

bool test_backends_registered() { return kThreadsRegistered && kFakeRegistered; }

bool in_process_only(const std::string& backend) { return backend == "threads"; }

}  // namespace collie::testing
