#include "probes/schedule.h"

namespace collie::probes {

int tournament_round_count(int n) { return n <= 1 ? 0 : (n % 2 == 0 ? n - 1 : n); }

// Circle method over m = n rounded up to even players (odd n gets a phantom player m-1 == n;
// whoever meets it has the bye). Player m-1 stays fixed; the others rotate one seat per round,
// so in round r player r meets m-1 and every other player x meets 2r - x (mod m - 1).
int tournament_peer(int n, int r, int rank) {
  if (n <= 1) return -1;
  const int m = n % 2 == 0 ? n : n + 1;
  const int k = m - 1;
  r = ((r % k) + k) % k;
  int peer;
  if (rank == k)
    peer = r;
  else if (rank == r)
    peer = k;
  else
    peer = ((2 * r - rank) % k + k) % k;
  return peer >= n ? -1 : peer;
}

Round tournament_round(int n, int r) {
  Round round;
  if (n <= 1) return round;
  const int m = n % 2 == 0 ? n : n + 1;
  r = ((r % (m - 1)) + (m - 1)) % (m - 1);
  // Seat by seat: the fixed player's pair first, then the pairs the rotation makes.
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
  for (int r = 0; r < tournament_round_count(n); ++r) rounds.push_back(tournament_round(n, r));
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
