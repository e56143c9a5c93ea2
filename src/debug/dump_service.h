#pragma once
// DumpService: decides when the flight recorder is written to COLLIE_FR_DUMP_DIR.
// Triggers: a timeout or an error (request_dump: a failure), SIGUSR1 (the handler only sets a
// flag and writes a byte to the thread's wake pipe; the service thread dumps), and the store key
// `dump_request` of the world group: a counter that a rank bumps (request_dump with all_ranks, or
// the debug server's POST /v1/dump) and marks with the key `dump_request/<n>` of the new value n,
// whose value says "failure" or "request" (request_cluster_dump). Failures ask once per job:
// the first failing rank claims `dump_request/failure` and bumps; the others see it claimed.
// Every request (SIGUSR1, POST /v1/dump, a tool's dump_request, dump_now) writes a fresh dump of
// that moment. Failures are different: the first failure's dump is written to the folder and
// kept in <folder>/first-failure/ (a hard link to the same file: one file per rank, written
// once; FlightRecorder::dump_to_dir), and the failures that follow it (errors cascade) are not
// dumped again, so its evidence is never buried. Every rank has a thread (`collie-dump-req`) parked
// in a store wait for the next such key on a store connection of its own, so all ranks dump the
// same moment. A bump without its key (a tool that only adds to the counter) is still seen when
// that wait is re-armed (every 30 s). No thread of the service wakes on a tick: without requests
// they sleep.
//
// Ownership: global() lives for the process; its thread is started by start() and joined at exit
// (a pending request is written before the thread ends).
// Thread safety: every method may be called from any thread; request_dump never blocks on I/O.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "core/worker_thread.h"
#include "debug/flight_recorder.h"

namespace collie {

class Store;

class DumpService {
 public:
  // `store_rearm`: how long the request watcher waits for the next request's key before it
  // reads the counter anyway (a bump without its key); tests shorten it.
  DumpService(FlightRecorder& fr, std::string dump_dir, FrDumpFormat format = {},
              std::chrono::milliseconds store_rearm = std::chrono::seconds(30));
  ~DumpService();
  DumpService(const DumpService&) = delete;
  DumpService& operator=(const DumpService&) = delete;

  // The process service over FlightRecorder::global(), dump dir from COLLIE_FR_DUMP_DIR, file
  // formats from COLLIE_FR_DUMP_FORMAT / _PREFIX (FrDumpFormat::from_env; throws
  // InvalidArgument on a bad value).
  static DumpService& global();

  // Starts the thread and installs the SIGUSR1 handler and, when a dump dir is set, the crash
  // handlers of crash_dump.h (idempotent). `world_store` (the world
  // group's store, may be null) is watched for `dump_request`; `rank` names the dump file.
  void start(int rank, std::shared_ptr<Store> world_store);
  // A failure: asks the thread to dump soon; never blocks. With all_ranks the thread also sets
  // `dump_request` (marked "failure") in the world store so every rank dumps. Written once per
  // process, also into first-failure/ (see above). `reason` is one short line for the log
  // ("all_reduce #57 in group 0 failed"); the dump's reason is "<reason>: <detail>" (the full
  // error, which whoever catches it prints anyway, so the log line does not repeat it).
  void request_dump(const std::string& reason, bool all_ranks = false,
                    const std::string& detail = "");
  // A request: asks the thread for a fresh dump soon (always written); never blocks.
  void request_fresh_dump(const std::string& reason);
  // Waits until no requested dump is pending (bounded); for processes about to _exit().
  void flush(std::chrono::milliseconds timeout);
  // A request dumped on the calling thread; returns the file(s) written, or "" when no dump dir
  // is set.
  std::string dump_now(const std::string& reason);
  // The crash handlers' dump (crash_dump.h): like dump_now, but waits at most 1 s for a dump in
  // progress (its thread may be the one that crashed), and logs nothing.
  std::string dump_on_crash(const std::string& reason);

  const std::string& dump_dir() const { return dir_; }
  int rank() const { return rank_.load(); }
  // Number of dumps written so far (tests).
  int dumps_written() const { return dumps_.load(); }

 private:
  void loop();
  struct StoreWatch;
  void watch_store(StoreWatch& w);  // the collie-dump-req thread's body
  void stop_store_watch();
  void ask_all_ranks();
  void automatic_dump(const std::string& reason, const std::string& detail);
  // Logs `reason`; the file records "<reason>: <detail>" (or `reason` alone).
  std::string write(const std::string& reason, DumpTrigger trigger, const std::string& detail = "");
  std::string write_locked(const std::string& reason, DumpTrigger trigger);
  std::string first_failure_dir() const;
  FlightRecorder& fr_;
  const std::string dir_;
  const FrDumpFormat format_;
  std::atomic<int> rank_{-1};
  std::atomic<int> dumps_{0};
  void wake();
  // The thread's wake pipe, made by start() before the thread runs; -1 until then (or when the
  // pipe could not be made).
  std::atomic<int> wake_read_{-1};
  std::atomic<int> wake_write_{-1};
  std::mutex mu_;  // guards the fields below and serializes dumps
  bool stop_ = false;
  std::string pending_;                    // reason of a failure's dump, "" = none
  std::string pending_detail_;             // and its detail (request_dump)
  std::string pending_request_;            // reason of a requested (fresh) dump, "" = none
  std::atomic<bool> failure_kept_{false};  // the first failure's dump was written
  bool busy_ = false;                      // the thread is writing a dump
  bool pending_all_ = false;
  std::shared_ptr<Store> store_;
  std::atomic<int64_t> seen_request_{0};
  const std::chrono::milliseconds store_rearm_;
  std::shared_ptr<StoreWatch> watch_;  // the running request watcher, if any; guarded by mu_
  WorkerThread thread_;                // collie-dump
  pid_t thread_pid_ = 0;               // the process that started thread_; guarded by mu_
  std::mutex dump_mu_;                 // one dump at a time
};

// The key under the world group's store that triggers a dump on every rank.
inline constexpr const char* kDumpRequestKey = "dump_request";
// Set (compare_set) by the first rank that fails, to the rank that did: only that rank bumps
// kDumpRequestKey, so a failure of every rank costs each rank one store request.
inline constexpr const char* kDumpFailureKey = "dump_request/failure";

// Asks every rank's DumpService watching `store` for a dump: bumps kDumpRequestKey and sets
// `dump_request/<n>` for the new value n to the trigger's name, which wakes the watchers at once.
// Returns n; throws what the store throws.
int64_t request_cluster_dump(Store& store, DumpTrigger trigger = DumpTrigger::Request);
// "dump_request/<n>": the key that marks request n.
std::string dump_request_key(int64_t n);

}  // namespace collie
