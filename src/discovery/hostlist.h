#pragma once
// Slurm hostlist expressions ("node[01-04,7]", "a[1-2]-ib,b3", "rack[1-2]n[1-3]") expanded into
// host names, in order, as Slurm lists them, and host names compressed into one. Zero padding
// follows the range's first bound ("[08-10]" -> 08 09 10). Pure and thread-safe.
#include <string>
#include <string_view>
#include <vector>

namespace collie {

// Throws InvalidArgument naming the expression when it is malformed (unbalanced brackets, a
// range whose end is below its start, non-numeric bounds, or more than 1,000,000 hosts).
std::vector<std::string> expand_hostlist(std::string_view expr);

// The shortest hostlist of `hosts` in Slurm's notation, as `scontrol show hostlist` writes it:
// names that differ only in their trailing number share one bracket ("node517", "node518",
// "node520" -> "node[517-518,520]"), prefixes sorted, numbers ascending, duplicates once. A
// number keeps its zero padding ("n08", "n09", "n10" -> "n[08-10]"). Names without a trailing
// number, or holding '[', ']' or ',', are listed as they are. expand_hostlist of the result gives
// the same names, sorted and without duplicates. "" for no hosts.
std::string compress_hostlist(std::vector<std::string> hosts);

}  // namespace collie
