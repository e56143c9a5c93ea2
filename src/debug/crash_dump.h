#pragma once
// A crash leaves evidence: handlers for std::terminate (an uncaught exception on any thread,
// e.g. libgloo's EnforceNotMet thrown on its own thread) and for the fatal signals SIGSEGV,
// SIGBUS, SIGFPE, SIGILL and SIGABRT write the flight recorder to the dump directory before
// the process dies, then hand over to what was installed before (the default: abort / die by
// the signal, so exit statuses and core dumps are unchanged).
//
// Best effort: the dump is built as usual (JSON, heap), which is not async-signal-safe; the
// directory and file name are fixed when the handlers are installed, the dump happens at most
// once per process, and an alarm(5) ends a signal-time dump that deadlocks (a crash inside the
// allocator or while the recorder's lock was held) so the process still dies.
//
// Installed by DumpService::start() when COLLIE_FR_DUMP_DIR is set (nothing to write otherwise).
// Thread safety: install is idempotent and may be called from any thread.
#include <string>

namespace collie {

class DumpService;

void install_crash_dump(DumpService& service);

// Writes the dump for `reason` now, once per process (later calls return ""), and says so on
// stderr naming `shown` (default: the reason); the crash handlers call this. Returns the file
// written, or "".
std::string crash_dump(const std::string& reason, const std::string& shown = "");

}  // namespace collie
