#include "probes/schedule.h"

#include <gtest/gtest.h>

#include <set>

namespace collie::probes {
namespace {

TEST(Tournament, EveryPairOnceNoRankTwiceInARound) {
  for (int n = 0; n <= 17; ++n) {
    const auto rounds = tournament_rounds(n);
    if (n <= 1) {
      EXPECT_TRUE(rounds.empty()) << n;
      continue;
    }
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 == 0 ? n - 1 : n) << n;
    std::set<std::pair<int, int>> seen;
    std::vector<int> byes(n, 0);
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_GE(a, 0);
        EXPECT_LT(b, n);
        EXPECT_TRUE(busy.insert(a).second) << "rank " << a << " twice in a round, n=" << n;
        EXPECT_TRUE(busy.insert(b).second) << "rank " << b << " twice in a round, n=" << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << a << "-" << b << " twice, n=" << n;
      }
      EXPECT_EQ(round.size(), static_cast<size_t>(n / 2));
      for (int r = 0; r < n; ++r)
        if (!busy.count(r)) ++byes[r];
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2)) << n;
    for (int r = 0; r < n; ++r) EXPECT_EQ(byes[r], n % 2) << "rank " << r << " n=" << n;
  }
}

TEST(Tournament, PeerInRound) {
  const auto rounds = tournament_rounds(3);
  int byes = 0;
  for (const auto& round : rounds) {
    for (int r = 0; r < 3; ++r) {
      const int p = peer_in_round(round, r);
      if (p < 0) {
        ++byes;
        continue;
      }
      EXPECT_EQ(peer_in_round(round, p), r);
    }
  }
  EXPECT_EQ(byes, 3);
}

TEST(Tournament, PeerInO1AgreesWithTheRounds) {
  // tournament_peer is what a rank of a large job uses instead of building the rounds.
  for (int n = 0; n <= 41; ++n) {
    EXPECT_EQ(tournament_round_count(n), static_cast<int>(tournament_rounds(n).size())) << n;
    const auto rounds = tournament_rounds(n);
    for (int r = 0; r < static_cast<int>(rounds.size()); ++r) {
      EXPECT_EQ(tournament_round(n, r), rounds[r]) << n << " round " << r;
      for (int x = 0; x < n; ++x) {
        EXPECT_EQ(tournament_peer(n, r, x), peer_in_round(rounds[r], x))
            << "n=" << n << " round " << r << " rank " << x;
        // Taken modulo the round count, as tournament_round.
        EXPECT_EQ(tournament_peer(n, r + static_cast<int>(rounds.size()), x),
                  tournament_peer(n, r, x));
      }
    }
  }
  // A large n: every rank's peers over all rounds are every other rank once (O(1) per step).
  const int n = 4097;
  std::vector<int> seen(n, 0);
  for (int r = 0; r < tournament_round_count(n); ++r) {
    const int p = tournament_peer(n, r, 1234);
    if (p >= 0) {
      EXPECT_EQ(tournament_peer(n, r, p), 1234);
      ++seen[p];
    }
  }
  for (int x = 0; x < n; ++x) EXPECT_EQ(seen[x], x == 1234 ? 0 : 1) << x;
}

}  // namespace
}  // namespace collie::probes
