// Single-process pieces of the gloo backend: its declared capability table, interface choice and
// error translation. (What it declares is run and checked by tests/backends/conformance.)
#include <gloo/common/error.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include "backends/gloo/gloo_device.h"
#include "backends/gloo/gloo_errors.h"
#include "comm/registry.h"
#include "core/env.h"
#include "core/error.h"
#include "core/thread_name.h"
#include "support/thread_probe.h"

namespace collie {
namespace {

TEST(GlooCapabilities, DeclaresEveryOpDtypeAndReduceOpOnCpu) {
  const BackendRegistration* reg = find_backend("gloo");
  ASSERT_NE(reg, nullptr);
  EXPECT_FALSE(reg->version.empty());
  const Capabilities& caps = reg->capabilities;
  for (OpType t : kAllOpTypes) {
    EXPECT_TRUE(caps.supports(t, DeviceType::CPU)) << op_name(t);
    EXPECT_FALSE(caps.supports(t, DeviceType::CUDA)) << op_name(t);
    for (DType d : kAllDTypes) {
      EXPECT_TRUE(caps.supports(t, DeviceType::CPU, d)) << op_name(t) << " " << dtype_name(d);
      if (!has_reduce_op(t)) continue;
      for (ReduceOp r : kAllReduceOps) {
        EXPECT_EQ(caps.supports(t, DeviceType::CPU, d, r), !(is_bitwise(r) && is_floating(d)))
            << op_name(t) << " " << dtype_name(d) << " " << reduce_op_name(r);
      }
    }
  }
}

TEST(GlooDevice, ChoiceIsAlwaysANumericAddress) {
  // The full precedence is tested in tests/comm/bind_address_test.cpp; here the device side.
  EXPECT_EQ(choose_gloo_device(MapEnv(MapEnv::Map{}), "").address, "127.0.0.1");
  auto c = choose_gloo_device(MapEnv(MapEnv::Map{{"COLLIE_GLOO_HOST", "localhost"}}), "");
  EXPECT_EQ(c.address.rfind("127.", 0) == 0 || c.address == "::1", true) << c.address;
  EXPECT_EQ(c.reason, "COLLIE_GLOO_HOST (localhost)");
}

TEST(GlooDevice, AddressNotOnThisHostIsBackendErrorNamingTheSetting) {
  GlooDeviceChoice c;
  c.address = "198.51.100.7";  // TEST-NET-2: never assigned to a host
  c.reason = "COLLIE_GLOO_HOST";
  try {
    create_gloo_device(c, 3);
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[Rank 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("198.51.100.7"), std::string::npos) << m;
    EXPECT_NE(m.find("COLLIE_GLOO_HOST"), std::string::npos) << m;
  }
}

template <typename E>
std::string translated_as(std::exception_ptr in, const GlooErrorContext& c) {
  try {
    std::rethrow_exception(translate_gloo_error(c, in));
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG TYPE: ") + e.what();
  }
}

int policy_of(int tid) { return sched_getscheduler(tid); }

// libgloo's I/O thread inherits its creator's name and policy: it is named collie-gloo-io and runs
// SCHED_BATCH (gloo_device.cpp says why), and the creating thread gets its own name and policy
// back. Without SCHED_BATCH a 8 B DETAIL all_reduce on ranks bound to one CPU each took a
// scheduler tick (3.8 ms p50; scripts/bench/overhead.sh PIN=1 DEBUG=DETAIL).
TEST(GlooDevice, ItsIoThreadIsNamedAndDoesNotPreemptTheOpThread) {
  name_this_thread("gloo-dev-test");
  const std::set<int> before = testing::threads_named("collie-gloo-io");
  auto dev = create_gloo_device(choose_gloo_device(MapEnv(MapEnv::Map{}), ""), 0);
  const int io = testing::new_thread("collie-gloo-io", before);
  ASSERT_GT(io, 0) << "libgloo's I/O thread did not get the name";
  EXPECT_EQ(policy_of(io), SCHED_BATCH);
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  EXPECT_STREQ(name, "gloo-dev-test");
  EXPECT_EQ(policy_of(0), SCHED_OTHER);
}

TEST(GlooErrors, TranslationPicksTypeAndNamesRankOpSeqPeer) {
  GlooErrorContext c{2, OpType::Send, 17, 1, "group 0 'default_pg'", Millis(500)};
  auto t = translated_as<TimeoutError>(
      std::make_exception_ptr(gloo::IoException("Timed out waiting 500ms for send")), c);
  EXPECT_NE(t.find("[Rank 2] gloo send #17 with peer 1"), std::string::npos) << t;
  EXPECT_NE(t.find("did not complete within 500 ms"), std::string::npos) << t;
  EXPECT_EQ(t.find("Timed out waiting"), std::string::npos) << "Gloo's own text again: " << t;
  auto n = translated_as<NetworkError>(
      std::make_exception_ptr(gloo::IoException("Connection reset by peer")), c);
  EXPECT_NE(n.find("[Rank 2] gloo send #17"), std::string::npos) << n;
  auto b = translated_as<BackendError>(std::make_exception_ptr(gloo::Exception("boom")), c);
  EXPECT_NE(b.find("boom"), std::string::npos) << b;
  auto same = translated_as<InvalidArgument>(std::make_exception_ptr(InvalidArgument("x")), c);
  EXPECT_EQ(same, "x");
}

}  // namespace
}  // namespace collie
