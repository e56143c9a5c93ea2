// The wrapper stack (src/stack/stack.h) as init_process_group builds it: tracing outermost, the
// DETAIL desync checks under it only at DETAIL, the backend innermost; an op passes every layer.
#include "stack/stack.h"

#include <gtest/gtest.h>

#include "comm/registry.h"
#include "comm/wrapper.h"
#include "core/log.h"
#include "debug/desync_checking_process_group.h"
#include "debug/tracing_process_group.h"
#include "store/hash_store.h"
#include "support/fake_backend.h"

namespace collie {
namespace {

struct LevelGuard {
  explicit LevelGuard(DebugLevel l) : saved(debug_level()) { set_debug_level(l); }
  ~LevelGuard() { set_debug_level(saved); }
  DebugLevel saved;
};

std::shared_ptr<testing::FakeBackend> fake(const std::string& name) {
  // Size 1: the DETAIL checks exchange fingerprints with nobody and pass.
  return std::make_shared<testing::FakeBackend>(
      testing::fake_info(0, 1, std::make_shared<HashStore>(), Millis(5000), name));
}

TEST(Stack, OffIsTracingOverTheBackend) {
  LevelGuard level(DebugLevel::Off);
  auto backend = fake("stack_off");
  auto pg = build_stack(backend, BackendArgs{backend->info(), nullptr});
  ASSERT_NE(dynamic_cast<TracingProcessGroup*>(pg.get()), nullptr);
  EXPECT_EQ(pg->inner(), backend.get());
  EXPECT_EQ(&backend_of(*pg), backend.get());
}

TEST(Stack, DetailPutsTheDesyncChecksUnderTracing) {
  LevelGuard level(DebugLevel::Detail);
  auto backend = fake("stack_detail");
  auto pg = build_stack(backend, BackendArgs{backend->info(), nullptr});
  ASSERT_NE(dynamic_cast<TracingProcessGroup*>(pg.get()), nullptr);
  ProcessGroup* middle = pg->inner();
  ASSERT_NE(dynamic_cast<DesyncCheckingProcessGroup*>(middle), nullptr);
  EXPECT_EQ(middle->inner(), backend.get());
  // An op goes through every layer to the backend and completes.
  float v[4] = {1, 2, 3, 4};
  pg->all_reduce(TensorView::cpu(v, 4, DType::Float32))->wait();
  EXPECT_EQ(backend->runs(), 1);
}

}  // namespace
}  // namespace collie
