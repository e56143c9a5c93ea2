#pragma once
// Writing a whole file so a reader sees the old file, the new file or none, never half of one:
// the bytes go to a hidden temporary file beside the target (".<name>.<16 random hex>.tmp", so
// tools that scan a directory for rank-numbered names never pick it up), which is then renamed
// over the target. Safe in a folder others can write (a shared COLLIE_FR_DUMP_DIR or results
// folder): the temporary name cannot be predicted and is created with O_EXCL|O_NOFOLLOW, so a
// planted symlink or FIFO is never written through or opened (a taken name is retried), and the
// rename replaces a symlink at the target instead of following it. The file gets the usual
// 0666 & ~umask mode. Thread-safe (also for one target from several threads: the last rename
// wins).
#include <string>
#include <string_view>

namespace collie {

// Throws Error, one line naming the file, when the temporary file cannot be written (missing
// or read-only directory, full disk) or renamed; the temporary file is removed then.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Gives the file `existing` a second name, `path`, as atomically: a hard link under a hidden
// temporary name beside `path` (created by link(2), which never overwrites or follows what is
// there), renamed over `path`. The bytes are written once and a later rename over `existing`
// leaves `path` as it was. Returns false, leaving nothing behind, when it cannot (a file system
// without hard links, another device, a missing directory): the caller writes the bytes instead.
bool link_file_atomic(const std::string& existing, const std::string& path);

namespace testing {
// Test seam: where the temporary names' 16-hex-digit tags come from (nullptr: getrandom), so a
// test can plant a symlink or FIFO under the exact name the next write will try. Not
// thread-safe: set it only while no write is running.
using TemporaryTagSource = std::string (*)();
void set_temporary_tag_source(TemporaryTagSource source);
}  // namespace testing

}  // namespace collie
