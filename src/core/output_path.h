#pragma once
// Checks, before any work starts, that an output file named by a flag can be written: its
// directory exists and is writable, and the path itself is not a directory or a read-only
// file. Commands call it before any rank is launched, so a typo in -J or --csv costs nothing.
// (Best effort: the file is not created, so a later failure, e.g. a full disk, is still
// reported when it is written.) Thread-safe.
#include <string>
#include <string_view>

namespace collie {

// "" and "-" (stdout) pass. Throws InvalidArgument, one line: "FLAG 'PATH': directory 'D' does
// not exist" / "... is a directory" / "... cannot be written (permission denied)".
void check_output_file(const std::string& path, std::string_view flag);

}  // namespace collie
