#include "probes/schedule.h"

namespace collie::probes {

std::vector<Round> tournament_rounds(int n) {
  std::vector<Round> rounds;
  if (n <= 1) return rounds;
  // Odd n gets a phantom player m-1 == n; whoever meets it has the bye.
  const int m = n % 2 == 0 ? n : n + 1;
  // Player m-1 stays fixed; the others rotate one seat per round.
  for (int r = 0; r < m - 1; ++r) {
    Round round;
    for (int i = 0; i < m / 2; ++i) {
      const int a = i == 0 ? m - 1 : (r + i) % (m - 1);
      const int b = (r + m - 1 - i) % (m - 1);
      if (a >= n || b >= n) continue;
      round.emplace_back(a < b ? a : b, a < b ? b : a);
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

int peer_in_round(const Round& round, int rank) {
  for (const auto& [a, b] : round) {
    if (a == rank) return b;
    if (b == rank) return a;
  }
  return -1;
}

}  // namespace collie::probes
