// Address choice for Gloo and the store on this host's real interfaces and routing table.
#include "discovery/bind_address.h"

#include <gtest/gtest.h>

#include "core/env.h"
#include "core/error.h"
#include "discovery/net_route.h"

namespace collie {
namespace {

TEST(BindAddress, LoopbackOnlyForASingleHost) {
  EXPECT_EQ(choose_gloo_bind(MapEnv(MapEnv::Map{}), "").address, "127.0.0.1");
  EXPECT_EQ(choose_gloo_bind(MapEnv(MapEnv::Map{}), "localhost").address, "127.0.0.1");
  EXPECT_EQ(choose_gloo_bind(MapEnv(MapEnv::Map{{"MASTER_ADDR", "127.0.0.1"}}), "").address,
            "127.0.0.1");
  EXPECT_EQ(choose_store_bind("127.0.0.1").address, "127.0.0.1");
}

TEST(BindAddress, RouteToARemoteHostIsNeverLoopback) {
  const auto nl = net::first_non_loopback();
  if (!nl) GTEST_SKIP() << "this host has no non-loopback interface";
  // The rendezvous host is this host's own address: the route source is that address.
  const auto c = choose_gloo_bind(MapEnv(MapEnv::Map{}), nl->address);
  EXPECT_EQ(c.address, nl->address);
  EXPECT_EQ(c.iface, nl->iface);
  EXPECT_NE(c.reason.find("route to"), std::string::npos) << c.reason;
  EXPECT_EQ(choose_store_bind(nl->address).address, nl->address);
  // A rendezvous host name that does not resolve here: a real interface, not loopback.
  const auto u = choose_gloo_bind(MapEnv(MapEnv::Map{}), "no-such-host.invalid");
  EXPECT_FALSE(net::is_loopback(u.address)) << u.address;
  EXPECT_NE(u.reason.find("does not resolve"), std::string::npos) << u.reason;
  EXPECT_EQ(choose_store_bind("no-such-host.invalid").address, "0.0.0.0");
  // MASTER_ADDR stands in when the rendezvous host is unknown (an explicit store).
  EXPECT_EQ(choose_gloo_bind(MapEnv(MapEnv::Map{{"MASTER_ADDR", nl->address}}), "").address,
            nl->address);
}

TEST(BindAddress, OverridesWinInOrder) {
  const MapEnv ifname(MapEnv::Map{{"GLOO_SOCKET_IFNAME", "lo,lo"}});
  const auto c = choose_gloo_bind(ifname, "no-such-host.invalid");
  EXPECT_EQ(c.address, "127.0.0.1");
  EXPECT_EQ(c.iface, "lo");
  EXPECT_EQ(c.reason, "GLOO_SOCKET_IFNAME=lo,lo");
  const MapEnv both(
      MapEnv::Map{{"GLOO_SOCKET_IFNAME", "no-such-if0"}, {"COLLIE_GLOO_HOST", "127.0.0.1"}});
  EXPECT_EQ(choose_gloo_bind(both, "10.9.9.9").reason, "COLLIE_GLOO_HOST");
}

TEST(BindAddress, BadOverridesAreOneLineNamingTheVariable) {
  try {
    choose_gloo_bind(MapEnv(MapEnv::Map{{"GLOO_SOCKET_IFNAME", "no-such-if0,lo"}}), "");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("GLOO_SOCKET_IFNAME 'no-such-if0,lo'"), std::string::npos)
        << e.what();
  }
  try {  // every listed interface must exist, not only the first (as torch checks them)
    choose_gloo_bind(MapEnv(MapEnv::Map{{"GLOO_SOCKET_IFNAME", "lo,no-such-if1"}}), "");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("interface 'no-such-if1'"), std::string::npos) << e.what();
  }
  try {
    choose_gloo_bind(MapEnv(MapEnv::Map{{"COLLIE_GLOO_HOST", "no-such-host.invalid"}}), "");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("COLLIE_GLOO_HOST"), std::string::npos) << e.what();
  }
}

TEST(NetRoute, ResolveAndRouteSource) {
  EXPECT_EQ(net::resolve("127.0.0.1"), std::vector<std::string>{"127.0.0.1"});
  EXPECT_TRUE(net::resolve("no-such-host.invalid").empty());
  EXPECT_EQ(net::route_source("127.0.0.1").value_or(""), "127.0.0.1");
  std::string why;
  EXPECT_FALSE(net::route_source("no-such-host.invalid", &why));
  EXPECT_NE(why.find("does not resolve"), std::string::npos) << why;
}

}  // namespace
}  // namespace collie
