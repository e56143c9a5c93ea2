// Gloo's connect phase ends at the group's timeout (libgloo alone waits several timeouts) and
// names the rank that never connected, from the gather's timeout reply (no N-key reads). Real
// libgloo devices and sockets; the ranks are threads.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "backends/gloo/process_group_gloo.h"
#include "core/env.h"
#include "core/error.h"
#include "store/hash_store.h"
#include "store/prefix_store.h"
#include "support/time_scale.h"

namespace collie {
namespace {

TEST(GlooConnect, MissingRankEndsTheConnectPhaseAtTheTimeoutNamingIt) {
  // The store's own timeout is long, as a rendezvous store's is: only the group's may bound it.
  auto store = std::make_shared<HashStore>(Millis(60000));
  const Millis timeout(1500);
  std::string errors[2];
  double took_ms[2] = {0, 0};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      GroupInfo info;
      info.backend = "gloo";
      info.rank = r;
      info.size = 3;  // rank 2 never starts
      info.timeout = timeout;
      info.store = std::make_shared<PrefixStore>("pg/0", store);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        ProcessGroupGloo pg(info, MapEnv(MapEnv::Map{}));
        errors[r] = "connected without rank 2";
      } catch (const TimeoutError& e) {
        errors[r] = e.what();
      } catch (const std::exception& e) {
        errors[r] = std::string("not a TimeoutError: ") + e.what();
      }
      took_ms[r] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(errors[r]);
    EXPECT_NE(errors[r].find("[Rank " + std::to_string(r) + "]"), std::string::npos);
    EXPECT_NE(errors[r].find("rank 2 never connected"), std::string::npos);
    EXPECT_NE(errors[r].find("within 1500 ms"), std::string::npos);
    EXPECT_GE(took_ms[r], 1400);
    EXPECT_LT(took_ms[r], testing::scaled(3000.0));
  }
}

}  // namespace
}  // namespace collie
