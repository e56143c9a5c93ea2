// comm/wrapper: layers stacked the way build_stack stacks them (each over what the previous one
// returned). An op enters every layer outside in, its Work comes back inside out through each
// after(), a refusing layer stops it before the backend, and a failure passes every failed().
#include "comm/wrapper.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "store/hash_store.h"
#include "support/fake_backend.h"

namespace collie {
namespace {

using Trace = std::vector<std::string>;

// Records its hooks in a shared trace; after() hands up a Work of its own, so the layer above can
// tell which Work it got.
class Layer final : public ProcessGroupWrapper {
 public:
  Layer(std::shared_ptr<ProcessGroup> inner, std::string name, Trace& trace, bool refuse = false)
      : ProcessGroupWrapper(std::move(inner)),
        name_(std::move(name)),
        trace_(trace),
        refuse_(refuse) {}
  Work* got = nullptr;  // the Work after() received
  std::shared_ptr<Work> made;

 protected:
  void before(const OpCall& call) override {
    trace_.push_back(name_ + ".before " + std::string(op_name(call.type)));
    if (refuse_) throw DesyncError(name_ + " refuses");
  }
  std::shared_ptr<Work> after(const OpCall& call, std::shared_ptr<Work> work) override {
    trace_.push_back(name_ + ".after");
    got = work.get();
    made = std::make_shared<Work>(call.type, call.seq, call.timeout);
    return made;
  }
  void failed(const OpCall&, std::exception_ptr) override { trace_.push_back(name_ + ".failed"); }

 private:
  std::string name_;
  Trace& trace_;
  bool refuse_;
};

class Backend final : public testing::FakeBackend {
 public:
  Backend()
      : FakeBackend(testing::fake_info(1, 4, std::make_shared<HashStore>(), Millis(5000), "3"),
                    /*hold=*/true) {}
  void shutdown() override { ++shutdowns; }
  int shutdowns = 0;
};

TEST(Wrapper, AnOpEntersOutsideInAndEachAfterGetsTheWorkTheLayerBelowReturned) {
  Trace trace;
  auto backend = std::make_shared<Backend>();
  auto inner = std::make_shared<Layer>(backend, "inner", trace);
  auto outer = std::make_shared<Layer>(inner, "outer", trace);
  float v[2] = {1, 2};
  auto work = outer->all_reduce(TensorView::cpu(v, 2, DType::Float32));
  EXPECT_EQ(trace, (Trace{"outer.before all_reduce", "inner.before all_reduce", "inner.after",
                          "outer.after"}));
  ASSERT_EQ(backend->held().size(), 1u);
  EXPECT_EQ(inner->got, backend->held()[0].get());
  EXPECT_EQ(outer->got, inner->made.get());
  EXPECT_EQ(work, outer->made);
  // Numbered once, by the group the caller submitted to; the layers below see that number.
  EXPECT_EQ(work->seq(), 1u);
  EXPECT_EQ(backend->held()[0]->seq(), 1u);
  EXPECT_EQ(outer->last_collective_seq(), 1u);
  EXPECT_EQ(backend->last_collective_seq(), 0u);
}

TEST(Wrapper, ALayerThatRefusesStopsTheOpBeforeTheBackendAndTheLayersAboveSeeItFail) {
  Trace trace;
  auto backend = std::make_shared<Backend>();
  auto refusing = std::make_shared<Layer>(backend, "refusing", trace, /*refuse=*/true);
  auto middle = std::make_shared<Layer>(refusing, "middle", trace);
  auto outer = std::make_shared<Layer>(middle, "outer", trace);
  try {
    outer->barrier();
    FAIL() << "the refused barrier was submitted";
  } catch (const DesyncError& e) {
    EXPECT_STREQ(e.what(), "refusing refuses");
  }
  EXPECT_EQ(trace, (Trace{"outer.before barrier", "middle.before barrier",
                          "refusing.before barrier", "middle.failed", "outer.failed"}));
  EXPECT_EQ(backend->runs(), 0);
}

TEST(Wrapper, EveryLayerAnswersForTheBackendItWraps) {
  Trace trace;
  auto backend = std::make_shared<Backend>();
  auto outer =
      std::make_shared<Layer>(std::make_shared<Layer>(backend, "inner", trace), "outer", trace);
  EXPECT_EQ(&backend_of(*outer), backend.get());
  EXPECT_EQ(&backend_of(*backend), backend.get());
  EXPECT_EQ(&outer->capabilities(), &backend->capabilities());
  EXPECT_EQ(&outer->device_runtime(), &backend->device_runtime());
  EXPECT_EQ(outer->rank(), 1);
  EXPECT_EQ(outer->size(), 4);
  EXPECT_EQ(outer->info().name, "3");
  EXPECT_EQ(outer->backend_name(), "fake");
  outer->shutdown();
  EXPECT_EQ(backend->shutdowns, 1);
}

}  // namespace
}  // namespace collie
