#pragma once
// Slurm hostlist expressions ("node[01-04,7]", "a[1-2]-ib,b3", "rack[1-2]n[1-3]") expanded into
// host names, in order, as Slurm lists them. Zero padding follows the range's first bound
// ("[08-10]" -> 08 09 10). Pure and thread-safe.
#include <string>
#include <string_view>
#include <vector>

namespace collie {

// Throws InvalidArgument naming the expression when it is malformed (unbalanced brackets, a
// range whose end is below its start, non-numeric bounds, or more than 1,000,000 hosts).
std::vector<std::string> expand_hostlist(std::string_view expr);

}  // namespace collie
