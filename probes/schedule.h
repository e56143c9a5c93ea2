#pragma once
// Round-robin tournament schedule for pairwise probes: every unordered pair of ranks meets
// exactly once, and within a round no rank is in two pairs, so a round's pairs can run at the
// same time without sharing an endpoint. Pure functions; thread-safe.
#include <utility>
#include <vector>

namespace collie::probes {

// One round: disjoint pairs (a, b) with a < b.
using Round = std::vector<std::pair<int, int>>;

// Circle method. n even: n-1 rounds of n/2 pairs. n odd: n rounds of (n-1)/2 pairs, each rank
// sitting out (a bye) exactly once. n <= 1: no rounds. REQUIRES: n >= 0.
std::vector<Round> tournament_rounds(int n);

// Round r (taken modulo the round count) of tournament_rounds(n), without building the others:
// what a quick pass over thousands of hosts uses. n <= 1: an empty round. REQUIRES: n >= 0.
Round tournament_round(int n, int r);

// The rank `rank` meets in `round`, or -1 for a bye.
int peer_in_round(const Round& round, int rank);

}  // namespace collie::probes
