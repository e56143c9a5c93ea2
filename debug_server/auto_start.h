#pragma once
// Starts this process's debug server when its world group is created (init_process_group), if
// COLLIE_DEBUG_PORT is set or a command passed --debug-port: the outermost step of the stack
// (src/stack/stack.cpp), so comm never includes debug_server.
//   COLLIE_DEBUG_PORT  base port (server on base + local rank), 0 = ephemeral
//   COLLIE_DEBUG_HOST  bind address, default 127.0.0.1 (others need COLLIE_DEBUG_TOKEN)
//   COLLIE_DEBUG_TOKEN bearer token required by every endpoint but /healthz
// One server per process: later groups (new_group, or further init_process_group calls from
// ranks run as threads) reuse it. Thread-safe.
namespace collie {

class DebugServer;
class ProcessGroup;
struct BackendArgs;

// Starts the server for `pg` when it is the world group (pg "0") and a port is configured; no-op
// otherwise and when this process already has one. Thread-safe.
void start_debug_server_if_asked(const ProcessGroup& pg, const BackendArgs& args);

// Whether this process has a debug server, or a port is configured (--debug-port, else
// COLLIE_DEBUG_PORT in args' environment) so its world group starts one. Thread-safe.
bool debug_server_configured(const BackendArgs& args);

// For CLI flags (--debug-port): takes precedence over COLLIE_DEBUG_PORT. -1 clears it.
void set_debug_port_override(int port);
// The server started for this process, or nullptr.
DebugServer* process_debug_server();

}  // namespace collie
