#pragma once
// Writing a whole file so a reader sees the old file, the new file or none, never half of one:
// the bytes go to a hidden temporary file beside the target (".<name>.<pid>.tmp", so tools that
// scan a directory for rank-numbered names never pick it up), which is then renamed over the
// target. Thread-safe for distinct targets.
#include <string>
#include <string_view>

namespace collie {

// Throws Error, one line naming the file, when the temporary file cannot be written (missing
// or read-only directory, full disk) or renamed; the temporary file is removed then.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace collie
