#include "probes/schedule.h"

namespace collie::probes {

Round tournament_round(int n, int r) {
  Round round;
  if (n <= 1) return round;
  // Odd n gets a phantom player m-1 == n; whoever meets it has the bye.
  const int m = n % 2 == 0 ? n : n + 1;
  r = ((r % (m - 1)) + (m - 1)) % (m - 1);
  // Player m-1 stays fixed; the others rotate one seat per round.
  for (int i = 0; i < m / 2; ++i) {
    const int a = i == 0 ? m - 1 : (r + i) % (m - 1);
    const int b = (r + m - 1 - i) % (m - 1);
    if (a >= n || b >= n) continue;
    round.emplace_back(a < b ? a : b, a < b ? b : a);
  }
  return round;
}

std::vector<Round> tournament_rounds(int n) {
  std::vector<Round> rounds;
  if (n <= 1) return rounds;
  const int m = n % 2 == 0 ? n : n + 1;
  for (int r = 0; r < m - 1; ++r) rounds.push_back(tournament_round(n, r));
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
