#pragma once
// new_group's membership agreement: the members of a new group check, through the group's
// store, that they all asked for the same ranks in the same order. Each member sends a digest of
// its list (O(1) bytes at any group size; sending the list made every member of a 50,000-rank
// group send ~300 KB); the first member records its list beside the digest, and a member whose
// digest differs reads that list to say how the two differ.
// Thread-safe as the store is.
#include <string>
#include <vector>

namespace collie {

class Store;

// REQUIRES: `group_store` is the new group's namespace, shared by its members. Throws
// InvalidArgument "[Rank r] new_group #id: this rank asked for ranks [...] but another member
// asked for [...]; ..." (each list cut to ~80 characters) when the lists differ.
void agree_on_members(Store& group_store, int parent_rank, int group_id,
                      const std::vector<int>& ranks);

}  // namespace collie
