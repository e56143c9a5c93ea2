#pragma once
// Names the calling thread ("collie-watchdog") so `top -H`, `ps -L`, gdb, /proc/PID/task/*/comm
// and /v1/stacks tell collie's threads apart from the application's and the backends'.
// Linux keeps at most 15 bytes of a name: longer names are cut there. Thread safety: names only
// the calling thread; safe from any thread. Never fails (a name that cannot be set is skipped).
namespace collie {

void name_this_thread(const char* name);

}  // namespace collie
