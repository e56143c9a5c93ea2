// Single-process pieces of the gloo backend: interface choice and error translation.
#include <gloo/common/error.h>
#include <gtest/gtest.h>

#include "backends/gloo/gloo_device.h"
#include "backends/gloo/gloo_errors.h"
#include "core/env.h"
#include "core/error.h"

namespace collie {
namespace {

TEST(GlooDevice, ChoiceFollowsPrecedence) {
  EXPECT_EQ(choose_gloo_device(MapEnv(MapEnv::Map{})).hostname, "127.0.0.1");
  EXPECT_EQ(choose_gloo_device(MapEnv(MapEnv::Map{{"MASTER_ADDR", "127.0.0.1"}})).hostname,
            "127.0.0.1");
  EXPECT_EQ(choose_gloo_device(MapEnv(MapEnv::Map{{"MASTER_ADDR", "localhost"}})).hostname,
            "127.0.0.1");
  auto remote = choose_gloo_device(MapEnv(MapEnv::Map{{"MASTER_ADDR", "10.1.2.3"}}));
  EXPECT_NE(remote.hostname, "127.0.0.1");
  EXPECT_EQ(remote.reason, "hostname");
  auto iface = choose_gloo_device(
      MapEnv(MapEnv::Map{{"MASTER_ADDR", "10.1.2.3"}, {"GLOO_SOCKET_IFNAME", "eth1,eth2"}}));
  EXPECT_EQ(iface.iface, "eth1");
  EXPECT_TRUE(iface.hostname.empty());
  auto host = choose_gloo_device(
      MapEnv(MapEnv::Map{{"GLOO_SOCKET_IFNAME", "eth1"}, {"COLLIE_GLOO_HOST", "node7.example"}}));
  EXPECT_EQ(host.hostname, "node7.example");
  EXPECT_TRUE(host.iface.empty());
}

TEST(GlooDevice, UnknownInterfaceIsBackendErrorNamingTheSetting) {
  GlooDeviceChoice c;
  c.iface = "no-such-if0";
  c.reason = "GLOO_SOCKET_IFNAME";
  try {
    create_gloo_device(c, 3);
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[Rank 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("no-such-if0"), std::string::npos) << m;
    EXPECT_NE(m.find("GLOO_SOCKET_IFNAME"), std::string::npos) << m;
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

TEST(GlooErrors, TranslationPicksTypeAndNamesRankOpSeqPeer) {
  GlooErrorContext c{2, OpType::Send, 17, 1, "group 0 'default_pg'", Millis(500)};
  auto t = translated_as<TimeoutError>(
      std::make_exception_ptr(gloo::IoException("Timed out waiting 500ms for send")), c);
  EXPECT_NE(t.find("[Rank 2] gloo send #17 with peer 1"), std::string::npos) << t;
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
