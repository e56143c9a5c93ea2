#pragma once
// Round-robin tournament schedule for pairwise probes: every unordered pair of ranks meets
// exactly once, and within a round no rank is in two pairs, so a round's pairs can run at the
// same time without sharing an endpoint. Pure functions; thread-safe.
//
// A rank needs only its own peer in a round: tournament_peer() answers that in O(1), so a rank
// walks the n - 1 rounds of a full tournament with O(1) state; tournament_round() builds one
// round (O(n)) for the one who plans it. tournament_rounds() materializes all n^2 / 2 pairs and
// is for tests and small n only.
#include <utility>
#include <vector>

namespace collie::probes {

// One round: disjoint pairs (a, b) with a < b.
using Round = std::vector<std::pair<int, int>>;

// Rounds of the tournament: n - 1 for even n, n for odd n (each rank sits out once), 0 for
// n <= 1. REQUIRES: n >= 0.
int tournament_round_count(int n);

// The rank `rank` meets in round r (taken modulo the round count) of tournament_rounds(n), or
// -1 for a bye; O(1). REQUIRES: 0 <= rank < n.
int tournament_peer(int n, int r, int rank);

// Circle method. n even: n-1 rounds of n/2 pairs. n odd: n rounds of (n-1)/2 pairs, each rank
// sitting out (a bye) exactly once. n <= 1: no rounds. REQUIRES: n >= 0. O(n^2) memory.
std::vector<Round> tournament_rounds(int n);

// Round r (taken modulo the round count) of tournament_rounds(n), without building the others:
// what a quick pass over thousands of hosts uses. n <= 1: an empty round. REQUIRES: n >= 0.
Round tournament_round(int n, int r);

// The rank `rank` meets in `round`, or -1 for a bye.
int peer_in_round(const Round& round, int rank);

}  // namespace collie::probes
