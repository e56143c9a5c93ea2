// comm/registry: backends registered and found by name, the one-line refusal of a backend that is
// unknown or not in this build, and init_process_group / new_group putting each new group inside
// the stack (src/stack).
#include "comm/registry.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "comm/wrapper.h"
#include "core/env.h"
#include "core/error.h"
#include "debug/tracing_process_group.h"
#include "stack/init.h"
#include "stack/membership.h"
#include "stack/stack.h"
#include "store/hash_store.h"
#include "support/fake_backend.h"
#include "support/test_backends.h"

namespace collie {
namespace {

BackendRegistration named(const std::string& name, const std::string& version = "") {
  BackendRegistration r;
  r.name = name;
  r.version = version;
  r.create = [](const BackendArgs& a) -> std::shared_ptr<ProcessGroup> {
    return std::make_shared<testing::FakeBackend>(a.info);
  };
  return r;
}

std::vector<std::string> listed() {
  std::vector<std::string> out;
  for (const auto* b : backends()) out.push_back(b->name);
  return out;
}

std::shared_ptr<testing::FakeBackend> fake(const std::string& name) {
  return std::make_shared<testing::FakeBackend>(
      testing::fake_info(0, 1, std::make_shared<HashStore>(), Millis(5000), name));
}

// What init_process_group says when it refuses `backend` (before any rendezvous).
std::string refusal(const std::string& backend) {
  MapEnv env({});
  InitOptions o;
  o.backend = backend;
  o.env = &env;
  try {
    init_process_group(o);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "backend '" << backend << "' was accepted";
  return {};
}

TEST(Registry, ABackendIsFoundByItsExactNameAndListedInNameOrder) {
  ASSERT_TRUE(testing::test_backends_registered());
  ASSERT_TRUE(register_backend(named("reg_zeta", "zeta 2.0")));
  ASSERT_TRUE(register_backend(named("reg_alpha", "alpha 1.0")));
  const BackendRegistration* z = find_backend("reg_zeta");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->name, "reg_zeta");
  EXPECT_EQ(z->version, "zeta 2.0");
  ASSERT_NE(find_backend("reg_alpha"), nullptr);
  EXPECT_EQ(find_backend("reg_alpha")->version, "alpha 1.0");
  EXPECT_EQ(find_backend("reg_"), nullptr);
  EXPECT_EQ(find_backend("REG_ZETA"), nullptr);
  const auto names = listed();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()))
      << fmt::format("{}", fmt::join(names, ","));
  for (const char* n : {"fake", "reg_alpha", "reg_zeta", "threads"}) {
    EXPECT_EQ(std::count(names.begin(), names.end(), n), 1) << n;
  }
}

TEST(Registry, AnUnknownBackendIsRefusedInOneLineListingTheBuiltOnes) {
  ASSERT_TRUE(testing::test_backends_registered());
  ASSERT_TRUE(register_missing_backend(MissingBackend{"reg_absent", "not built: test"}));
  const std::string built = fmt::format("{}", fmt::join(listed(), ", "));
  const std::string expected = "unknown backend 'no_such_backend' (built: " + built + ")";
  EXPECT_EQ(refusal("no_such_backend"), expected);
  EXPECT_NE(built.find("fake, "), std::string::npos) << built;
  EXPECT_EQ(built.find("reg_absent"), std::string::npos) << "a missing backend listed as built";
  // new_group looks its backend up the same way.
  auto parent = fake("0");
  NewGroupOptions o;
  o.backend = "no_such_backend";
  try {
    new_group(*parent, {0}, o);
    FAIL() << "new_group accepted an unknown backend";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(Registry, ABackendNotInThisBuildIsRefusedWithTheReason) {
  ASSERT_TRUE(register_missing_backend(
      MissingBackend{"reg_missing", "not built: widget toolkit not found"}));
  const std::string line =
      "backend 'reg_missing' is not available in this build: not built: widget toolkit not found";
  EXPECT_EQ(refusal("reg_missing"), line);
  EXPECT_EQ(backend_unavailable_reason("reg_missing"), line);
  EXPECT_EQ(find_backend("reg_missing"), nullptr);
  const auto missing = missing_backends();
  EXPECT_TRUE(std::any_of(missing.begin(), missing.end(),
                          [](const MissingBackend& m) { return m.name == "reg_missing"; }));
}

TEST(Registry, TheUnavailableReasonIsTheBackendsOwnLineOrEmpty) {
  ASSERT_TRUE(testing::test_backends_registered());
  BackendRegistration r = named("reg_unavailable");
  r.unavailable_reason = [] { return std::string("no widget driver: test"); };
  ASSERT_TRUE(register_backend(std::move(r)));
  EXPECT_EQ(backend_unavailable_reason("reg_unavailable"), "no widget driver: test");
  EXPECT_EQ(backend_unavailable_reason("fake"), "");  // registered without a reason function
  EXPECT_EQ(backend_unavailable_reason("reg_never_registered"), "");
}

// find_backend already answered with the first registration of a name; a second one must not
// show up beside it in backends() (`collie info`, the "built:" list) with capabilities never used.
TEST(Registry, ASecondRegistrationOfANameIsRefusedAndTheFirstStays) {
  ASSERT_TRUE(register_backend(named("reg_dup", "first")));
  EXPECT_FALSE(register_backend(named("reg_dup", "second")));
  ASSERT_NE(find_backend("reg_dup"), nullptr);
  EXPECT_EQ(find_backend("reg_dup")->version, "first");
  const auto names = listed();
  EXPECT_EQ(std::count(names.begin(), names.end(), "reg_dup"), 1);
}

// find_backend's pointers are kept by callers (perf's run metadata, init's lookup); a later
// registration must not move the registrations they point to.
TEST(Registry, AFoundRegistrationStaysPutWhenMoreAreRegistered) {
  ASSERT_TRUE(register_backend(named("reg_stable", "stable 1")));
  const BackendRegistration* first = find_backend("reg_stable");
  ASSERT_NE(first, nullptr);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(register_backend(named(fmt::format("reg_more_{}", i))));
  ASSERT_EQ(find_backend("reg_stable"), first);
  EXPECT_EQ(first->version, "stable 1");
}

// init_process_group puts the group the registration created inside the stack (src/stack): the
// tracing layer outermost, the backend innermost, the env it was given passed down.
TEST(Registry, InitProcessGroupWrapsTheGroupTheRegistrationCreatedInTheStack) {
  ASSERT_TRUE(testing::test_backends_registered());
  MapEnv env({});
  InitOptions o;
  o.backend = "fake";
  o.store = std::make_shared<HashStore>();
  o.rank = 0;
  o.world_size = 1;
  o.env = &env;
  auto pg = init_process_group(o);
  ASSERT_NE(dynamic_cast<TracingProcessGroup*>(pg.get()), nullptr);
  EXPECT_NE(dynamic_cast<testing::FakeBackend*>(&backend_of(*pg)), nullptr);
  EXPECT_EQ(pg->backend_name(), "fake");
  // new_group's groups get the same stack.
  auto sub = new_group(*pg, {0});
  ASSERT_NE(sub, nullptr);
  ASSERT_NE(dynamic_cast<TracingProcessGroup*>(sub.get()), nullptr);
  EXPECT_NE(dynamic_cast<testing::FakeBackend*>(&backend_of(*sub)), nullptr);
  destroy_process_group(*sub);
  destroy_process_group(*pg);
}

// Members agree on a new group's membership through a digest (O(1) bytes per member at any
// group size); a member that asked for another list is told both lists, each cut to ~80
// characters. Members as threads, each on a clone of one store.
TEST(Registry, NewGroupMembersThatDisagreeAreToldBothLists) {
  auto store = std::make_shared<HashStore>(Millis(5000));
  std::vector<int> a, b;
  for (int r = 0; r < 100; ++r) a.push_back(r);
  b = a;
  std::swap(b[0], b[1]);  // the same ranks, another order: another group
  std::string err[2];
  std::thread t0([&] { agree_on_members(*store->clone(), 0, 7, a); });
  t0.join();  // member 0 records its list first
  std::thread t1([&] {
    try {
      agree_on_members(*store->clone(), 1, 7, b);
    } catch (const InvalidArgument& e) {
      err[1] = e.what();
    }
  });
  t1.join();
  EXPECT_NE(err[1].find("[Rank 1] new_group #7: this rank asked for ranks [1,0,2,3,"),
            std::string::npos)
      << err[1];
  EXPECT_NE(err[1].find("but another member asked for [0,1,2,3,"), std::string::npos) << err[1];
  EXPECT_NE(err[1].find(",...]"), std::string::npos) << err[1];  // cut, not 100 ranks
  EXPECT_LT(err[1].size(), 400u) << err[1];
  // Members that agree pass, however many.
  EXPECT_NO_THROW(agree_on_members(*store->clone(), 2, 7, a));
  // The store holds a digest and one copy of the list, not one per member.
  EXPECT_LT(store->stored_bytes(), 600u);
}

}  // namespace
}  // namespace collie
