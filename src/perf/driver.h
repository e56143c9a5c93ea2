#pragma once
// The perf driver: orchestrates the sweep, warmup, validation (validation.h), timing
// (timed_loop.h) and the cross-rank combining of results (combine.h) for every requested
// collective × dtype × op × root, and hands finished rows to a sink. Collectives only supply
// descriptors (collective.h). Talks to the ProcessGroup API only; publishes no metrics itself
// (`collie perf` puts a MetricsSink, metrics_sink.h, in front of its ReportSink).
//
// Every rank of `pg` must call run_perf with the same options. Blocking steps are bounded by
// options.timeout (or the group's timeout); on expiry run_perf throws TimeoutError whose message
// names the step and, on rank 0, the ranks that had not finished it.
#include <atomic>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "perf/collective.h"
#include "perf/options.h"
#include "reports/result.h"
#include "reports/table.h"

namespace collie::perf {

// Receives results on rank 0 only (other ranks get no calls). Not called concurrently.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void run_started(const reports::RunMeta&) {}
  virtual void collective_started(const reports::TableHeader&) {}
  // One table line: either placement may be null (not run).
  virtual void row(const reports::ResultRow* out, const reports::ResultRow* in) = 0;
  virtual void collective_finished(const std::string& collective,
                                   const std::vector<reports::ResultRow>& rows,
                                   const reports::Summary& summary) = 0;
  // A '#' comment line for the table (e.g. a skipped dtype/op combination).
  virtual void note(const std::string&) {}
  // A new sweep cycle begins; in a soak (`soak`) the previous cycle's rows are no longer needed.
  virtual void cycle_started(int /*cycle*/, bool /*soak*/) {}
  virtual void progress(double /*fraction in [0, 1]*/) {}
};

struct PerfOutcome {
  reports::RunResult result;  // complete on rank 0; metadata only elsewhere
  int64_t wrong_total = 0;    // summed over ranks (every rank knows it)
  // Non-zero when the run stopped early because a rank's `stop` flag was set: the largest flag
  // value any rank had (a signal number). Every rank knows it, and every rank stopped after the
  // same row; rows completed before it are in `result` and were given to the sink.
  int stopped_by = 0;
};

// `stop` (may be null): set it non-zero (e.g. from a signal handler, see stop_signal.h) to end the
// run at the next row boundary. The flag travels with each row's results, so all ranks agree on
// where to stop without an extra collective; it works for one cycle, -N and soaks alike.
// Throws InvalidArgument (unknown collective, unsupported dtype/op asked for explicitly, world too
// small), TimeoutError, or the backend's errors.
PerfOutcome run_perf(ProcessGroup& pg, const PerfOptions& options, ResultSink* sink,
                     const std::string& collie_version, const std::atomic<int>* stop = nullptr);

}  // namespace collie::perf
